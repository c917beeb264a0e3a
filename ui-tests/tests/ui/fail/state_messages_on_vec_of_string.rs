//! `messages` needs a list of `MessageLike` items.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Chat {
    topic: String,
    #[reducer(messages)]
    history: Vec<String>,
}

fn main() {}
