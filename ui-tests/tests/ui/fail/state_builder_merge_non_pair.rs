//! A non-pair item given to a `merge` channel's builder.

use stategraph::prelude::*;
use std::collections::BTreeMap;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    #[reducer(merge)]
    scores: BTreeMap<String, f64>,
}

fn main() {
    let _ = Research::update().scores(["a"]);
}
