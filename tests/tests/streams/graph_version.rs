//! The graph version hashes the topology, not the order it was declared in, and every
//! checkpoint records it.

use stategraph::checkpoint::{CheckpointConfig, CheckpointSaver, InMemorySaver};
use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct S {
    #[reducer(add)]
    n: u32,
}

#[node]
fn a(_: &S) -> SUpdate {
    S::update().n(1u32)
}

#[node]
fn b(_: &S) -> SUpdate {
    S::update().n(2u32)
}

#[node]
fn c(_: &S) -> SUpdate {
    S::update().n(3u32)
}

#[test]
fn declaration_order_does_not_matter_but_topology_does() {
    let one = StateGraph::<S>::new()
        .add_node(a)
        .add_node(b)
        .add_node(c)
        .add_edge(START, a)
        .add_edge([a, b], c)
        .add_edge(a, b)
        .compile()
        .unwrap();
    let same = StateGraph::<S>::new()
        .add_node(c)
        .add_node(b)
        .add_node(a)
        .add_edge(a, b)
        .add_edge((b, a), c)
        .add_edge(START, a)
        .compile()
        .unwrap();
    assert_eq!(one.graph_version(), same.graph_version());
    assert_eq!(one.graph_version().len(), 64);
    let other = StateGraph::<S>::new()
        .add_node(a)
        .add_node(b)
        .add_node(c)
        .add_edge(START, a)
        .add_edge(a, c)
        .add_edge(a, b)
        .compile()
        .unwrap();
    assert_ne!(one.graph_version(), other.graph_version());
    let routed = StateGraph::<S>::new()
        .add_node(a)
        .add_node(b)
        .add_node(c)
        .add_edge(START, a)
        .add_conditional_edges(a, |_: &S| Route::to(b), (b, c))
        .compile()
        .unwrap();
    assert_ne!(one.graph_version(), routed.graph_version());
}

#[tokio::test]
async fn checkpoints_record_the_graph_version() {
    let saver = std::sync::Arc::new(InMemorySaver::new());
    let graph = StateGraph::<S>::new()
        .add_node(a)
        .add_edge(START, a)
        .compile_with(CompileOptions::new().shared_checkpointer(saver.clone()))
        .unwrap();
    let cfg = RunConfig::new().thread("t");
    graph.invoke(S::update(), &cfg).await.unwrap();
    let tuples = saver
        .list(
            &CheckpointConfig::thread("t"),
            &stategraph::checkpoint::ListOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(tuples.len(), 2);
    for t in tuples {
        assert_eq!(&*t.checkpoint.graph_version, graph.graph_version());
    }
}
