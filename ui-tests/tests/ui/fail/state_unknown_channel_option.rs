//! `#[channel(..)]` only knows `untracked`.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
    #[channel(untraked)]
    scratch: u32,
}

fn main() {}
