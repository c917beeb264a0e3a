//! A node may name the lifetime of its borrowed input (and of its context).
#![allow(clippy::needless_lifetimes)] // the named lifetimes are the case under test

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct S {
    #[reducer(add)]
    n: u32,
}

#[node]
fn plan<'a>(s: &'a S) -> SUpdate {
    S::update().n(s.n + 1)
}

#[node]
async fn review<'s, 'c>(s: &'s S, ctx: &'c NodeContext) -> SUpdate {
    let _ = ctx.step();
    S::update().n(s.n * 10)
}

pub fn main() {
    let graph = StateGraph::<S>::new()
        .add_node(plan)
        .add_node(review)
        .add_edge(START, plan)
        .add_edge(plan, review)
        .add_edge(review, END)
        .compile()
        .expect("compiles");
    let out = graph
        .invoke_blocking(S::update(), &RunConfig::new())
        .expect("runs");
    // plan adds 1 (n = 1), review adds 10 * 1.
    assert_eq!(out.values.n, 11);
    assert!(plan::call(&S { n: 4 }).n.is_some());
}
