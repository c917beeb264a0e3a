//! `merge` on an alias (in a module) of a `Vec`, written as a full path.

use stategraph::prelude::*;

mod types {
    pub type Pairs = std::vec::Vec<(String, u32)>;
}

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    #[reducer(merge)]
    scores: crate::types::Pairs,
}

fn main() {}
