//! A node returning a `String`.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
}

#[node]
async fn plan(state: &Research) -> String {
    state.topic.clone()
}

fn main() {}
