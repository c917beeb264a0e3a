//! `name = ""`: a node needs a name.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
}

#[node(name = "")]
fn plan(_state: &Research) -> ResearchUpdate {
    Research::update()
}

fn main() {}
