//! `#[node]` on an associated function of an `impl` written inside a function body,
//! next to a free node with another name.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
}

#[node]
fn fetch(_state: &Research) -> ResearchUpdate {
    Research::update()
}

fn main() {
    struct Planner;

    impl Planner {
        #[node]
        async fn plan(_state: &Research, _ctx: &NodeContext) -> ResearchUpdate {
            Research::update()
        }
    }

    let _ = fetch;
}
