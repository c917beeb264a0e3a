//! A tool cannot be generic: its arguments are decoded into concrete types.

use stategraph_agent::tool;

/// Echo a value.
#[tool]
fn echo<T: serde::de::DeserializeOwned + ToString>(value: T) -> String {
    value.to_string()
}

fn main() {}
