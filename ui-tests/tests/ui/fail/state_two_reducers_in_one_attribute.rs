//! A field has one reducer: `#[reducer(append, add)]` names two.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
    #[reducer(append, add)]
    notes: Vec<String>,
}

fn main() {}
