//! A reserved node name written as a raw identifier in a nested module.

mod nodes {
    use stategraph::prelude::*;

    #[derive(GraphState, Clone, Debug, Default)]
    pub struct Research {
        pub topic: String,
    }

    #[stategraph::node]
    pub fn r#__end__(_state: &Research) -> ResearchUpdate {
        Research::update()
    }
}

fn main() {}
