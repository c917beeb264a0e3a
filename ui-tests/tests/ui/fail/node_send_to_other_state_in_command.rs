//! A `Send` to a node of another state, from a command.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
}

#[derive(GraphState, Clone, Debug, Default)]
struct Other {
    count: u32,
}

#[node]
fn worker(item: &u32) -> OtherUpdate {
    Other::update().count(*item)
}

#[node]
fn fan(_state: &Research) -> Command<Research> {
    Command::goto(stategraph::Send::new(worker, 7u32))
}

fn main() {}
