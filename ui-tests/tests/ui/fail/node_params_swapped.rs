//! The context first and the state second.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
}

#[node]
fn plan(_ctx: &NodeContext, _state: &Research) -> ResearchUpdate {
    Research::update()
}

fn main() {}
