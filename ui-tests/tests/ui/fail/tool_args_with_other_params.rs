//! An `#[args]` parameter is the whole arguments object, so it is the only one.

use stategraph_agent::tool;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Query {
    text: String,
}

/// Search the docs.
#[tool]
fn search(#[args] q: Query, limit: u32) -> String {
    format!("{limit} {}", q.text)
}

fn main() {}
