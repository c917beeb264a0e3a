//! A last-value channel's builder takes the channel's type.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
    #[reducer(add)]
    steps: u32,
}

fn main() {
    let _ = Research::update().topic(5u32);
}
