//! A node named `END` shadows the prelude's `END`.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
}

#[node(name = "finish")]
#[allow(non_snake_case)]
fn END(_state: &Research) -> ResearchUpdate {
    Research::update()
}

fn main() {}
