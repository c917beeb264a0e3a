use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Desk {
    question: String,
    attempts: u32,
}

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
}

fn main() {
    let child = StateGraph::<Research>::new().compile().unwrap();
    let mut desk = StateGraph::<Desk>::new();
    desk.add_subgraph(Subgraph::new(
        "research",
        child,
        |d: &Desk| Research::update().topic(d.attempts),
        |_: &Research| Desk::update(),
    ));
}
