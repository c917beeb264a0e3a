//! Raw identifiers: `fn r#type` is the tool `type`, `r#in` the property `in`.

use stategraph_agent::{Tool, tool};

/// Name the type of a value.
#[tool]
fn r#type(r#in: String, r#as: Option<String>) -> String {
    format!("{}{}", r#in, r#as.unwrap_or_default())
}

pub fn main() {
    let spec = r#type.spec();
    assert_eq!(spec.name, "type");
    assert_eq!(spec.parameters["required"], serde_json::json!(["in"]));
    assert!(spec.parameters["properties"]["as"].is_object());
    let out = futures::executor::block_on(r#type.call(serde_json::json!({"in": "a", "as": "b"})));
    assert_eq!(out, Ok("ab".to_string()));
    assert_eq!(r#type::run("c".into(), None), "c");
}
