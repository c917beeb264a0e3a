//! `append` on a type alias of a number: the tokens do not show the type.

use stategraph::prelude::*;

type Count = u32;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    #[reducer(append)]
    count: Count,
}

fn main() {}
