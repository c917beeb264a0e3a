//! A node of another state among a tuple of edge sources.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
}

#[derive(GraphState, Clone, Debug, Default)]
struct Other {
    count: u32,
}

#[node]
fn plan(_state: &Research) -> ResearchUpdate {
    Research::update()
}

#[node]
fn write(_state: &Research) -> ResearchUpdate {
    Research::update()
}

#[node]
fn foreign(_state: &Other) -> OtherUpdate {
    Other::update()
}

fn main() {
    let _ = StateGraph::<Research>::new()
        .add_node(plan)
        .add_node(write)
        .add_edge(START, plan)
        .add_edge((plan, foreign), write)
        .compile();
}
