//! An empty state, `pub(crate)` in a nested module.

mod inner {
    #[derive(stategraph::GraphState, Clone, Debug, Default)]
    pub(crate) struct Nothing {}
}

fn main() {}
