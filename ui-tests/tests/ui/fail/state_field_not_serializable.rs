//! A checkpointed channel's type must be serializable.

use stategraph::prelude::*;

#[derive(Clone, Debug, Default)]
struct Cache {
    hits: u32,
}

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
    cache: Cache,
}

fn main() {}
