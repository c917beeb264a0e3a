//! A bare `stategraph::Route` inside a boxed router type.

#[derive(stategraph::GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
}

type Router = Box<dyn Fn(&Research) -> stategraph::Route>;

fn main() {
    let _: Option<Router> = None;
}
