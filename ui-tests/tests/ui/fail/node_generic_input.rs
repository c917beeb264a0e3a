//! A node generic over its input, used in a graph: one error, on the type parameter.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
}

#[node]
fn plan<T: std::fmt::Debug>(_state: &T) -> ResearchUpdate {
    Research::update()
}

fn main() {
    let _graph = StateGraph::<Research>::new()
        .add_node(plan)
        .add_edge(START, plan)
        .add_edge(plan, END)
        .compile();
}
