//! The update builder has one method per channel; there is no `nope`.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
    #[reducer(add)]
    steps: u32,
}

fn main() {
    let _ = Research::update().nope(1);
}
