//! A non-serde type inside `Option<Vec<_>>`.

use stategraph::prelude::*;

#[derive(Clone, Debug, Default)]
struct Cache {
    hits: u32,
}

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    caches: Option<Vec<Cache>>,
}

fn main() {}
