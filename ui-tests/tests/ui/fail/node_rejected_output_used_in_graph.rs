//! A node whose return type is not an output, used in a graph: the signature is the
//! only error, not every place the node is named.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
}

#[node]
async fn plan(state: &Research, _ctx: &NodeContext) -> Option<String> {
    Some(state.topic.clone())
}

fn main() {
    let _graph = StateGraph::<Research>::new()
        .add_node(plan)
        .add_edge(START, plan)
        .add_edge(plan, END)
        .compile();
}
