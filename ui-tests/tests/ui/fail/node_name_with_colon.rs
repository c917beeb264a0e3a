//! `name = "plan:v2"`: `:` separates task paths.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
}

#[node(name = "plan:v2")]
fn plan(_state: &Research) -> ResearchUpdate {
    Research::update()
}

fn main() {}
