use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
    #[reducer(append)]
    notes: Vec<String>,
}

#[node]
fn plan(_state: &Research, _ctx: &NodeContext, _extra: u32) -> ResearchUpdate {
    Research::update()
}

fn main() {}
