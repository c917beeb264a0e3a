//! `reads(r#TYPE)` for the field `r#type`: names are matched exactly.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Item {
    r#type: String,
}

#[node(reads(r#TYPE))]
fn plan(_item: &Item) -> ItemUpdate {
    Item::update()
}

fn main() {}
