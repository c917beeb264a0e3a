//! Every `ToolOutput`: text, JSON, `()`, `impl ToolOutput`, and `Result`s of them with any `Display` error.

use serde_json::json;
use stategraph_agent::{Json, Tool, ToolError, tool};

/// Divide two numbers.
#[tool]
fn divide(a: f64, b: f64) -> Result<String, String> {
    if b == 0.0 {
        return Err("cannot divide by zero: pass a non-zero `b`".into());
    }
    Ok((a / b).to_string())
}

/// Parse a number.
#[tool]
async fn parse(text: String) -> Result<Json<i64>, std::num::ParseIntError> {
    text.parse().map(Json)
}

/// Forget everything.
#[tool]
fn forget() {}

/// The answer.
#[tool]
fn answer() -> serde_json::Value {
    json!({"answer": 42})
}

/// A fixed text.
#[tool]
fn fixed() -> Result<&'static str, Box<dyn std::error::Error + Send + Sync>> {
    Ok("fixed")
}

/// Greet someone.
#[tool]
fn greet(name: String) -> impl stategraph_agent::ToolOutput {
    format!("hi {name}")
}

pub fn main() {
    let run = futures::executor::block_on;
    assert_eq!(run(divide.call(json!({"a": 1, "b": 4}))), Ok("0.25".into()));
    assert_eq!(
        run(divide.call(json!({"a": 1, "b": 0}))),
        Err(ToolError::Failed {
            tool: "divide".into(),
            message: "cannot divide by zero: pass a non-zero `b`".into()
        })
    );
    assert_eq!(run(parse.call(json!({"text": "12"}))), Ok("12".into()));
    assert!(matches!(run(parse.call(json!({"text": "x"}))), Err(ToolError::Failed { .. })));
    assert_eq!(run(forget.call(json!({}))), Ok("done".into()));
    assert_eq!(run(answer.call(json!({}))), Ok(r#"{"answer":42}"#.into()));
    assert_eq!(run(fixed.call(json!({}))), Ok("fixed".into()));
    assert_eq!(run(greet.call(json!({"name": "Ada"}))), Ok("hi Ada".into()));
}
