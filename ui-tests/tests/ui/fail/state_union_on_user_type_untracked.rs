//! `union` on an untracked user type: no checkpoint involved, still one error.

use stategraph::prelude::*;

#[derive(Clone, Debug, Default)]
struct Tags(Vec<String>);

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    #[reducer(union)]
    #[channel(untracked)]
    tags: Tags,
}

fn main() {}
