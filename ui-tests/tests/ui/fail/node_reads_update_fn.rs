//! `reads(update)`: the generated `update()` function is not a field.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
}

#[node(reads(topic, update))]
async fn plan(_state: &Research) -> ResearchUpdate {
    Research::update()
}

fn main() {}
