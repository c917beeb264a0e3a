//! A field has one reducer: two `#[reducer]` attributes are rejected.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
    #[reducer(add)]
    #[reducer(with = keep_max)]
    steps: u32,
}

fn keep_max(current: &mut u32, update: u32) {
    *current = (*current).max(update);
}

fn main() {}
