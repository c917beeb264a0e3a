//! `with =` twice, with generic paths.

use stategraph::prelude::*;

fn keep<T: PartialOrd>(current: &mut T, update: T) {
    if update > *current {
        *current = update;
    }
}

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    #[reducer(with = keep::<u32>, with = self::keep::<u32>)]
    best: u32,
}

fn main() {}
