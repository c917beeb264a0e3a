//! `score` and `Score` both want the key `SCORE`.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
#[allow(non_snake_case)]
struct Research {
    score: u32,
    Score: u32,
}

fn main() {}
