//! `with = "keep_max"`: a string, not a path.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    #[reducer(with = "keep_max")]
    best: u32,
}

fn main() {}
