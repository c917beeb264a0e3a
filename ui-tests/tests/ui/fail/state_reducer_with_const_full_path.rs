//! `with = limits::MAX`: a constant in a nested module, not a function.

use stategraph::prelude::*;

mod limits {
    pub(crate) const MAX: f64 = 1.0;
}

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    #[reducer(with = crate::limits::MAX)]
    best: f64,
}

fn main() {}
