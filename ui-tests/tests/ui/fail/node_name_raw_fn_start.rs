//! `fn r#start` in a nested module: still the reserved name `start`.

mod nodes {
    use stategraph::prelude::*;

    #[derive(GraphState, Clone, Debug, Default)]
    pub(crate) struct Research {
        pub(crate) topic: String,
    }

    #[node]
    pub(crate) fn r#start(_state: &Research) -> ResearchUpdate {
        Research::update()
    }
}

fn main() {}
