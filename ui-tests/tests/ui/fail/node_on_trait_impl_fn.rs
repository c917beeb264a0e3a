//! `#[stategraph::node]` (full path) on a function of a trait impl.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
}

trait Step {
    fn plan(state: &Research) -> ResearchUpdate;
}

struct Planner;

impl Step for Planner {
    #[stategraph::node]
    fn plan(_state: &Research) -> ResearchUpdate {
        Research::update()
    }
}

fn main() {}
