//! `reads(TEXT)`: field names are matched exactly.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Doc {
    text: String,
}

#[node(reads(TEXT))]
fn plan(_state: &Doc) -> DocUpdate {
    Doc::update()
}

fn main() {}
