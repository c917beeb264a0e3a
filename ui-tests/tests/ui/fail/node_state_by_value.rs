use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
    #[reducer(append)]
    notes: Vec<String>,
}

#[node]
fn plan(state: Research) -> ResearchUpdate {
    Research::update().topic(state.topic)
}

fn main() {}
