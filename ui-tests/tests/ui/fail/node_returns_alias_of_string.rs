//! A node returning a type alias of `String`: only the type checker sees through it.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
}

type Summary = String;

#[node]
fn plan(state: &Research) -> Summary {
    state.topic.clone()
}

fn main() {}
