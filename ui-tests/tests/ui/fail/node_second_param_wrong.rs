//! A second parameter that is not `&NodeContext`.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
}

#[node]
fn plan(_state: &Research, _limit: &u32) -> ResearchUpdate {
    Research::update()
}

fn main() {}
