//! A state has one schema, so it cannot be generic.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research<T> {
    topic: String,
    payload: T,
}

fn main() {}
