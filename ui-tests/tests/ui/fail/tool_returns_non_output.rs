//! A tool returns the text the model reads.

use stategraph_agent::tool;

/// Count the letters of a word.
#[tool]
fn letters(word: String) -> usize {
    word.len()
}

fn main() {}
