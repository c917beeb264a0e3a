//! A state without `Clone`.

use stategraph::prelude::*;

#[derive(GraphState, Debug, Default)]
struct Research {
    topic: String,
}

fn main() {}
