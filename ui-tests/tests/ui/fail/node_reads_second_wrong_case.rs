//! `reads(text, Text)`: the second is not a field.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Doc {
    text: String,
}

#[node(reads(text, Text))]
fn plan(_state: &Doc) -> DocUpdate {
    Doc::update()
}

fn main() {}
