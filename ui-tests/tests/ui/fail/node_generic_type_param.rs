//! A node generic over a type: a node has one concrete state.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
}

#[node]
fn plan<'a, T: Default>(_state: &'a Research) -> ResearchUpdate {
    let _ = T::default();
    Research::update()
}

fn main() {}
