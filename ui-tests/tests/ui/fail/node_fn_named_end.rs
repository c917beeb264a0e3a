//! A node whose name is reserved by the graph (`end`).

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
}

#[node]
fn end(_state: &Research) -> ResearchUpdate {
    Research::update()
}

fn main() {}
