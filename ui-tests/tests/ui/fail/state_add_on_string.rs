//! `add` needs a numeric field.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    #[reducer(add)]
    topic: String,
    steps: u32,
}

fn main() {}
