//! `merge` needs a map field.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
    #[reducer(merge)]
    notes: Vec<String>,
}

fn main() {}
