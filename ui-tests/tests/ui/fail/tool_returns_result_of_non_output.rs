//! The `Ok` of a tool's `Result` must be a tool output too.

use stategraph_agent::tool;

/// Count the letters of a word.
#[tool]
async fn letters(word: String) -> Result<usize, String> {
    Ok(word.len())
}

fn main() {}
