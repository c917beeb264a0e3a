//! A node whose name is reserved by the graph (`start`).

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
}

#[node]
fn start(_state: &Research) -> ResearchUpdate {
    Research::update()
}

fn main() {}
