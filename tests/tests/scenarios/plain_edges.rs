//! Plain edges: several edges into one node from tasks of the same superstep schedule
//! it once; from different supersteps, once per superstep.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Edges {
    /// `name@step`, in apply order.
    #[reducer(append)]
    trace: Vec<String>,
    /// What `c` saw of `trace` length each time it ran.
    #[reducer(append)]
    c_saw: Vec<usize>,
}

macro_rules! tracing_nodes {
    ($($name:ident),* $(,)?) => {$(
        #[node]
        fn $name(_s: &Edges, ctx: &NodeContext) -> EdgesUpdate {
            Edges::update().trace([format!("{}@{}", ctx.node(), ctx.step())])
        }
    )*};
}

tracing_nodes!(a, b, b1, b2);

#[node]
fn c(s: &Edges, ctx: &NodeContext) -> EdgesUpdate {
    Edges::update()
        .trace([format!("{}@{}", ctx.node(), ctx.step())])
        .c_saw([s.trace.len()])
}

#[tokio::test]
async fn edges_from_the_same_superstep_schedule_the_target_once() {
    let graph = StateGraph::<Edges>::new()
        .add_node(a)
        .add_node(b)
        .add_node(c)
        .add_edge(START, a)
        .add_edge(START, b)
        .add_edge(a, c)
        .add_edge(b, c)
        .compile()
        .unwrap();
    let out = graph
        .invoke(Edges::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.values.trace, ["a@0", "b@0", "c@1"]);
    assert_eq!(out.values.c_saw, [2]);
    assert_eq!(out.steps, 2);
}

#[tokio::test]
async fn duplicate_edges_schedule_the_target_once() {
    let graph = StateGraph::<Edges>::new()
        .add_node(a)
        .add_node(c)
        .add_edge(START, a)
        .add_edge(START, a)
        .add_edge(a, c)
        .add_edge(a, c)
        .compile()
        .unwrap();
    let out = graph
        .invoke(Edges::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.values.trace, ["a@0", "c@1"]);
}

#[tokio::test]
async fn edges_from_different_supersteps_schedule_the_target_once_per_superstep() {
    // a → c fires after step 0; b1 → b2 → c fires after step 1: c runs in steps 1 and 2.
    let graph = StateGraph::<Edges>::new()
        .add_node(c)
        .add_node(b2)
        .add_node(b1)
        .add_node(a)
        .add_edge(START, a)
        .add_edge(START, b1)
        .add_edge(b1, b2)
        .add_edge(a, c)
        .add_edge(b2, c)
        .compile()
        .unwrap();
    let out = graph
        .invoke(Edges::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.values.trace, ["a@0", "b1@0", "b2@1", "c@1", "c@2"]);
    // Each run of c saw the state before its own step: the second one saw the first.
    assert_eq!(out.values.c_saw, [2, 4]);
    assert_eq!(out.steps, 3);
}

#[tokio::test]
async fn router_and_edge_into_the_same_node_in_one_step_schedule_once() {
    let graph = StateGraph::<Edges>::new()
        .add_node(a)
        .add_node(b)
        .add_node(c)
        .add_edge(START, a)
        .add_edge(START, b)
        .add_edge(a, c)
        .add_conditional_edges(b, |_: &Edges| Route::to(c), [c])
        .compile()
        .unwrap();
    let out = graph
        .invoke(Edges::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.values.trace, ["a@0", "b@0", "c@1"]);
}
