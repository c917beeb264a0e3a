//! A node taking `&str`, used in a graph: its state comes from its return type, so
//! the input is the only error.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
}

#[node]
fn plan(topic: &str) -> ResearchUpdate {
    Research::update().topic(topic.to_owned())
}

fn main() {
    let _graph = StateGraph::<Research>::new()
        .add_node(plan)
        .add_edge(START, plan)
        .add_edge(plan, END)
        .compile();
}
