//! A non-serde type inside a `Vec`.

use stategraph::prelude::*;

#[derive(Clone, Debug, Default)]
struct Cache {
    hits: u32,
}

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    #[reducer(append)]
    caches: Vec<Cache>,
}

fn main() {}
