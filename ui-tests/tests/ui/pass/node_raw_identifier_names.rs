//! Raw identifiers as node names: `fn r#loop` is the node `loop` at runtime, and a
//! raw field name is read by `reads(r#type)`.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct S {
    r#type: String,
    #[reducer(add)]
    r#loop: u32,
}

#[node(reads(r#type))]
fn r#loop(s: &S) -> SUpdate {
    S::update().r#loop(s.r#type.len() as u32)
}

mod steps {
    use super::{S, SUpdate};

    #[stategraph::node]
    pub(crate) async fn r#match(_s: &S) -> SUpdate {
        S::update().r#loop(1u32)
    }
}

pub fn main() {
    assert_eq!(r#loop.name(), "loop");
    assert_eq!(steps::r#match.name(), "match");
    assert_eq!(r#loop.reads(), Some(&[0][..]));
    let graph = StateGraph::<S>::new()
        .add_node(r#loop)
        .add_node(steps::r#match)
        .add_edge(START, r#loop)
        .add_edge(r#loop, steps::r#match)
        .add_edge(steps::r#match, END)
        .compile()
        .expect("compiles");
    let names: Vec<&str> = graph.node_names().collect();
    assert_eq!(names, ["loop", "match"]);
    let out = graph
        .invoke_blocking(S::update().r#type("abc"), &RunConfig::new())
        .expect("runs");
    assert_eq!(out.values.r#loop, 4);
}
