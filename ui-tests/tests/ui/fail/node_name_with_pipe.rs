//! `name = "a|b"`: `|` separates channel keys.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
}

#[node(name = "plan|write")]
async fn plan(_state: &Research) -> ResearchUpdate {
    Research::update()
}

fn main() {}
