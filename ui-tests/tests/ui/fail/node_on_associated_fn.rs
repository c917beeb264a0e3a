//! `#[node]` on an associated function without `self`.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
}

struct Planner;

impl Planner {
    #[node]
    fn plan(_state: &Research) -> ResearchUpdate {
        Research::update()
    }
}

fn main() {}
