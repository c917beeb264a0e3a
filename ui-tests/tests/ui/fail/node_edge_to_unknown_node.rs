use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
    #[reducer(append)]
    notes: Vec<String>,
}

#[node]
fn plan(_state: &Research) -> ResearchUpdate {
    Research::update().notes(["plan"])
}

#[node]
fn review(_state: &Research) -> ResearchUpdate {
    Research::update().notes(["review"])
}

fn main() {
    let _ = StateGraph::<Research>::new()
        .add_node(plan)
        .add_node(review)
        .add_edge(START, plan)
        .add_edge(plan, reviw)
        .compile();
}
