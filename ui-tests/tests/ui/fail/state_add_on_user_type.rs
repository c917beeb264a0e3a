//! `add` on a user type that is not a number.

use stategraph::prelude::*;

#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct Score {
    points: u32,
}

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    #[reducer(add)]
    score: Score,
}

fn main() {}
