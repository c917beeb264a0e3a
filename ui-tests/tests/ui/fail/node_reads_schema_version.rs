//! `reads(schema_version)`: the derive's own constant is not a field.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
}

#[node(reads(schema_version))]
fn plan(_state: &Research) -> ResearchUpdate {
    Research::update()
}

fn main() {}
