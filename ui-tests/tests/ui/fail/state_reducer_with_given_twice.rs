//! `with =` given twice in one `#[reducer]`: the last one must not silently win.

use stategraph::prelude::*;

fn keep_max(current: &mut f64, update: f64) {
    *current = current.max(update);
}

fn keep_min(current: &mut f64, update: f64) {
    *current = current.min(update);
}

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    #[reducer(with = keep_max, with = keep_min)]
    best: f64,
}

fn main() {}
