//! A state without `Default`.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug)]
struct Research {
    topic: String,
}

fn main() {}
