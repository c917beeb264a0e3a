//! `name = "__end__"`: the graph's END marker.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
}

#[node(name = "__end__")]
fn finish(_state: &Research) -> ResearchUpdate {
    Research::update()
}

fn main() {}
