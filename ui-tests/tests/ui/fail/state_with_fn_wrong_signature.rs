//! A `with = path` reducer must be `fn(&mut T, T)` (or `fn(&mut T, U)` with `update = U`).

use stategraph::prelude::*;

fn keep_max(current: f64, update: f64) -> f64 {
    current.max(update)
}

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
    #[reducer(with = keep_max)]
    best: f64,
}

fn main() {}
