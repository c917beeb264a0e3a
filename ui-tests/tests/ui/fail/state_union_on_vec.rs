//! `union` needs a set field.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
    #[reducer(union)]
    seen: Vec<String>,
}

fn main() {}
