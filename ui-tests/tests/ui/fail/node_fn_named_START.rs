//! A node named `START` shadows the prelude's `START`, here without a `#[node(name)]`.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
}

#[node]
#[allow(non_snake_case)]
async fn START(_state: &Research) -> ResearchUpdate {
    Research::update()
}

fn main() {}
