//! `with = SOME_CONST`: `with` takes a function path.

use stategraph::prelude::*;

const KEEP_MAX: u32 = 3;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    #[reducer(with = KEEP_MAX)]
    best: u32,
}

fn main() {}
