//! Handles of another state's graph in a tuple of sources, through a type alias.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
}

#[derive(GraphState, Clone, Debug, Default)]
struct Other {
    count: u32,
}

type OtherGraph = StateGraph<Other>;

fn noop(_: &Research) -> ResearchUpdate {
    Research::update()
}

fn other_noop(_: &Other) -> OtherUpdate {
    Other::update()
}

fn main() {
    let mut other = OtherGraph::new();
    let foreign = other.add_node_fn("foreign", other_noop);
    let mut g = StateGraph::<Research>::new();
    let a = g.add_node_fn("a", noop);
    let b = g.add_node_fn("b", noop);
    g.add_edge((&a, &foreign), &b);
}
