//! `append` needs a list field.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
    #[reducer(append)]
    steps: u32,
}

fn main() {}
