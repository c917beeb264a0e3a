//! The context first, written as `stategraph::NodeContext`.

#[derive(stategraph::GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
}

#[stategraph::node]
fn plan(_ctx: &stategraph::NodeContext, _state: &Research) -> ResearchUpdate {
    Research::update()
}

fn main() {}
