//! The `#[args]` form: one struct is the whole arguments object, its field docs
//! are the properties' descriptions, and its serde attributes decide what decodes.

use stategraph_agent::{Tool, tool};

/// A query.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Query {
    /// What to look for.
    text: String,
    /// How many hits.
    #[serde(default = "ten")]
    limit: u32,
}

fn ten() -> u32 {
    10
}

/// Search the docs.
#[tool(description = "Search the documentation.")]
async fn search(#[args] query: Query) -> String {
    format!("{} x {}", query.limit, query.text)
}

pub fn main() {
    let spec = search.spec();
    assert_eq!(spec.description, "Search the documentation.");
    assert_eq!(spec.parameters["properties"]["text"]["description"], "What to look for.");
    assert_eq!(spec.parameters["required"], serde_json::json!(["text"]));
    assert_eq!(spec.parameters["additionalProperties"], false);
    let out = futures::executor::block_on(search.call(serde_json::json!({"text": "graphs"})));
    assert_eq!(out, Ok("10 x graphs".to_string()));
}
