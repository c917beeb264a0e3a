//! `State::CHANNELS` belongs to `GraphState`, so a field cannot take that key.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
    channels: Vec<String>,
}

fn main() {}
