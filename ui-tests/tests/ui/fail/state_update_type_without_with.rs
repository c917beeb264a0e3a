//! `update = Type` only goes with a `with = path` reducer.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
    #[reducer(append, update = String)]
    notes: Vec<String>,
}

fn main() {}
