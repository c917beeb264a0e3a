//! A wrong value type in an `add` channel's builder.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    #[reducer(add)]
    steps: u32,
}

fn main() {
    let _ = Research::update().steps(-1i64);
}
