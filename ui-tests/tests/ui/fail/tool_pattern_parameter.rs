//! Each parameter is a named property of the arguments object.

use stategraph_agent::tool;

/// Add two numbers.
#[tool]
fn add((a, b): (i64, i64)) -> String {
    (a + b).to_string()
}

fn main() {}
