//! `#[reducer(append = true)]`: a built-in reducer takes no value.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    #[reducer(append = true)]
    notes: Vec<String>,
}

fn main() {}
