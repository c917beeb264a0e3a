//! `#[node(name = ..)]` on a trait's provided function, in a nested module.

mod agents {
    use stategraph::prelude::*;

    #[derive(GraphState, Clone, Debug, Default)]
    pub struct Research {
        topic: String,
    }

    pub trait Planner {
        #[node(name = "plan")]
        fn r#loop(_state: &Research) -> ResearchUpdate {
            Research::update()
        }
    }
}

fn main() {}
