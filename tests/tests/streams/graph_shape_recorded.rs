//! The compiled topology is recorded with the graph version: the first root
//! checkpoint of each graph version in a thread carries the graph's shape under
//! `__graph__`, so a tool with no user code (the `stategraph` command, the Studio)
//! reads it back with `checkpoint::recorded_shape` from any saver.

use std::sync::Arc;

use serde_json::Value;
use stategraph::checkpoint::{
    CheckpointConfig, CheckpointSaver, GRAPH_SHAPE_KEY, InMemorySaver, ListOptions, recorded_shape,
};
use stategraph::prelude::*;
use stategraph::{GraphShape, ShapeNodeKind};
use stategraph_postgres::{PostgresOptions, PostgresSaver};
use stategraph_sqlite::SqliteSaver;
use stategraph_tests::servers;

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

/// Version A: `a` only.
fn graph_a(saver: Arc<dyn CheckpointSaver>) -> CompiledGraph<S> {
    StateGraph::<S>::new()
        .add_node(a)
        .add_edge(START, a)
        .add_edge(a, END)
        .compile_with(CompileOptions::new().shared_checkpointer(saver))
        .unwrap()
}

/// Version B: `a` then `b`.
fn graph_b(saver: Arc<dyn CheckpointSaver>) -> CompiledGraph<S> {
    StateGraph::<S>::new()
        .add_node(a)
        .add_node(b)
        .add_edge(START, a)
        .add_edge(a, b)
        .add_edge(b, END)
        .compile_with(CompileOptions::new().shared_checkpointer(saver))
        .unwrap()
}

/// The recorded shapes of a thread's root checkpoints, oldest first, with the
/// graph version of the checkpoint that holds each.
async fn recorded(saver: &dyn CheckpointSaver, thread: &str) -> Vec<(String, Value)> {
    let mut tuples = saver
        .list(&CheckpointConfig::thread(thread), &ListOptions::new())
        .await
        .unwrap();
    tuples.reverse();
    tuples
        .into_iter()
        .filter_map(|t| {
            let shape = t.metadata.extra.get(GRAPH_SHAPE_KEY)?;
            Some((t.checkpoint.graph_version.to_string(), parsed(shape)))
        })
        .collect()
}

/// A recorded shape: its JSON text, parsed.
fn parsed(recorded: &Value) -> Value {
    serde_json::from_str(recorded.as_str().expect("the shape's JSON text")).unwrap()
}

#[tokio::test]
async fn a_thread_continued_by_a_changed_graph_holds_both_shapes_once_each() {
    let saver: Arc<dyn CheckpointSaver> = Arc::new(InMemorySaver::new());
    let (one, two) = (graph_a(saver.clone()), graph_b(saver.clone()));
    assert_ne!(one.graph_version(), two.graph_version());
    let thread = RunConfig::new().thread("t");
    one.invoke(S::update().n(1u32), &thread).await.unwrap();
    one.invoke(S::update().n(1u32), &thread).await.unwrap();
    two.invoke(S::update().n(1u32), &thread).await.unwrap();
    two.invoke(S::update().n(1u32), &thread).await.unwrap();

    // Two runs of each version, one record of each: the first checkpoint of A
    // (no parent), the first of B (its parent was A's).
    let shapes = recorded(&*saver, "t").await;
    let versions: Vec<&str> = shapes.iter().map(|(v, _)| v.as_str()).collect();
    assert_eq!(versions, [one.graph_version(), two.graph_version()]);
    for ((_, stored), graph) in shapes.iter().zip([one.shape(), two.shape()]) {
        assert_eq!(stored, &serde_json::to_value(&graph).unwrap());
    }

    let read = |v: &str| {
        let (saver, v) = (saver.clone(), v.to_string());
        async move { recorded_shape(&*saver, "t", &v).await.unwrap() }
    };
    assert_eq!(read(one.graph_version()).await, Some(one.shape()));
    assert_eq!(read(two.graph_version()).await, Some(two.shape()));
    assert_eq!(read("no such version").await, None);
    assert_eq!(
        recorded_shape(&*saver, "no-such-thread", one.graph_version())
            .await
            .unwrap(),
        None
    );

    // Back to A on an old checkpoint of A: its parent is A's, nothing new to record.
    let first_of_b = saver
        .list(&CheckpointConfig::thread("t"), &ListOptions::new())
        .await
        .unwrap()
        .into_iter()
        .find(|t| {
            t.metadata.extra.contains_key(GRAPH_SHAPE_KEY)
                && *t.checkpoint.graph_version == *two.graph_version()
        })
        .unwrap();
    let before_b = first_of_b.parent_config.unwrap().checkpoint_id.unwrap();
    one.update_state(
        &RunConfig::new().thread("t").checkpoint(&before_b),
        S::update().n(5u32),
    )
    .await
    .unwrap();
    assert_eq!(recorded(&*saver, "t").await.len(), 2);
    // ...while B editing A's checkpoint does record B again (a fork of A by B).
    two.update_state(
        &RunConfig::new().thread("t").checkpoint(&before_b),
        S::update().n(5u32),
    )
    .await
    .unwrap();
    let shapes = recorded(&*saver, "t").await;
    assert_eq!(shapes.len(), 3);
    assert_eq!(shapes[2].0, two.graph_version());
}

#[tokio::test]
async fn run_metadata_cannot_set_or_override_the_recorded_shape() {
    let saver: Arc<dyn CheckpointSaver> = Arc::new(InMemorySaver::new());
    let graph = graph_a(saver.clone());
    let mut extra = serde_json::Map::new();
    extra.insert(GRAPH_SHAPE_KEY.into(), "a forged shape".into());
    extra.insert("user".into(), "ana".into());
    let config = RunConfig::new().thread("t").metadata(extra);
    assert_eq!(config.configured_metadata().len(), 1);
    assert!(!config.configured_metadata().contains_key(GRAPH_SHAPE_KEY));
    graph.invoke(S::update().n(1u32), &config).await.unwrap();
    let tuples = saver
        .list(&CheckpointConfig::thread("t"), &ListOptions::new())
        .await
        .unwrap();
    assert!(tuples.iter().all(|t| t.metadata.extra["user"] == "ana"));
    let stamped: Vec<Value> = tuples
        .iter()
        .filter_map(|t| t.metadata.extra.get(GRAPH_SHAPE_KEY))
        .map(parsed)
        .collect();
    assert_eq!(stamped, [serde_json::to_value(graph.shape()).unwrap()]);
}

#[tokio::test]
async fn subgraph_namespaces_record_nothing_and_the_root_shape_nests_the_child() {
    let saver: Arc<dyn CheckpointSaver> = Arc::new(InMemorySaver::new());
    let child = StateGraph::<S>::new()
        .add_node(a)
        .add_node(b)
        .add_edge(START, a)
        .add_edge(a, b)
        .add_edge(b, END)
        .compile()
        .unwrap();
    let mut parent = StateGraph::<S>::new();
    let inner = parent.add_subgraph(stategraph::Subgraph::shared("inner", child.clone()));
    parent.add_edge(START, &inner).add_edge(&inner, END);
    let parent = parent
        .compile_with(CompileOptions::new().shared_checkpointer(saver.clone()))
        .unwrap();
    parent
        .invoke(S::update().n(1u32), &RunConfig::new().thread("t"))
        .await
        .unwrap();
    let namespaces = saver.list_namespaces("t").await.unwrap();
    assert!(namespaces.len() > 1, "{namespaces:?}");
    for ns in namespaces.iter().filter(|ns| !ns.is_empty()) {
        let mut config = CheckpointConfig::thread("t");
        config.checkpoint_ns.clone_from(ns);
        let tuples = saver.list(&config, &ListOptions::new()).await.unwrap();
        assert!(!tuples.is_empty());
        assert!(
            tuples
                .iter()
                .all(|t| !t.metadata.extra.contains_key(GRAPH_SHAPE_KEY)),
            "{ns}"
        );
    }
    let shape: GraphShape = recorded_shape(&*saver, "t", parent.graph_version())
        .await
        .unwrap()
        .unwrap();
    let node = shape.nodes.iter().find(|n| n.id == "inner").unwrap();
    assert_eq!(node.kind, ShapeNodeKind::Subgraph);
    assert_eq!(node.subgraph.as_deref(), Some(&child.shape()));
}

/// Runs graph A then B on thread `t` of `saver`.
async fn write_both(saver: Arc<dyn CheckpointSaver>) -> (GraphShape, GraphShape) {
    let (one, two) = (graph_a(saver.clone()), graph_b(saver));
    let thread = RunConfig::new().thread("t");
    one.invoke(S::update().n(1u32), &thread).await.unwrap();
    two.invoke(S::update().n(1u32), &thread).await.unwrap();
    (one.shape(), two.shape())
}

/// Reads both shapes back through `saver`, opened apart from the graphs.
async fn read_both(saver: &dyn CheckpointSaver, shapes: &(GraphShape, GraphShape)) {
    for shape in [&shapes.0, &shapes.1] {
        let read = recorded_shape(saver, "t", &shape.version).await.unwrap();
        assert_eq!(read.as_ref(), Some(shape));
    }
}

#[tokio::test]
async fn sqlite_returns_the_shapes_to_a_reader_without_the_graph() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shapes.sqlite");
    let shapes = write_both(Arc::new(SqliteSaver::open(&path).unwrap())).await;
    let reader = SqliteSaver::open(&path).unwrap();
    read_both(&reader, &shapes).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_returns_the_shapes_to_a_reader_without_the_graph() {
    let Some(url) = servers::postgres_url(module_path!()) else {
        return;
    };
    let schema = servers::fresh_schema("shape");
    let options = || PostgresOptions::new().schema(schema.clone()).pool_size(2);
    let writer = PostgresSaver::connect_with(&url, options()).await.unwrap();
    let shapes = write_both(Arc::new(writer)).await;
    let reader = PostgresSaver::connect_with(&url, options()).await.unwrap();
    read_both(&reader, &shapes).await;
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .await
        .unwrap();
}
