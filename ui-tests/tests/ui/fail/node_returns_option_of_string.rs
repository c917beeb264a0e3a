//! A node returning `Option<String>`, written as a full path.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
}

#[node]
fn plan(state: &Research) -> ::core::option::Option<std::string::String> {
    Some(state.topic.clone())
}

fn main() {}
