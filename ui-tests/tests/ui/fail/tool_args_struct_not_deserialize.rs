//! The `#[args]` struct must implement `Deserialize` too.

use schemars::JsonSchema;
use stategraph_agent::tool;

#[derive(JsonSchema)]
struct Query {
    text: String,
}

/// Search the docs.
#[tool]
fn search(#[args] q: Query) -> String {
    q.text
}

fn main() {}
