//! A node taking `&mut State`, used in a graph (sources, targets, conditional targets).

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
}

#[node]
fn plan(state: &mut Research) -> ResearchUpdate {
    state.topic.clear();
    Research::update()
}

#[node]
fn review(_state: &Research) -> ResearchUpdate {
    Research::update()
}

fn main() {
    let _graph = StateGraph::<Research>::new()
        .add_node(plan)
        .add_node(review)
        .add_edge(START, plan)
        .add_edge((plan, review), END)
        .compile();
}
