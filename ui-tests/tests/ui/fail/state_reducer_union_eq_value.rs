//! `#[reducer(union = "set")]`: a built-in reducer takes no value.

use stategraph::prelude::*;
use std::collections::BTreeSet;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    #[reducer(union = "set")]
    seen: BTreeSet<String>,
}

fn main() {}
