//! `name = "Start"`: reserved in any case.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
}

#[node(name = "Start")]
fn begin(_state: &Research) -> ResearchUpdate {
    Research::update()
}

fn main() {}
