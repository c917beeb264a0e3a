//! A run's `configurable` values and typed context reach every node, in subgraphs
//! too; a node asking for a context the run lacks (or of another type) fails with an
//! error naming the type it wanted.

use std::sync::Arc;

use serde_json::{Value, json};
use stategraph::prelude::*;
use stategraph::{RunError, Subgraph};

/// Who runs the graph: a handle, not data (the context need not serialize).
struct Caller {
    name: String,
    calls: Arc<std::sync::atomic::AtomicUsize>,
}

#[derive(GraphState, Clone, Debug, Default)]
struct Trace {
    #[reducer(append)]
    seen: Vec<String>,
}

/// What a node of `label` saw: the caller's name and `configurable.model`.
fn seen(label: &str, ctx: &NodeContext) -> Result<TraceUpdate, NodeError> {
    let caller: &Caller = ctx.context()?;
    caller
        .calls
        .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let model = ctx
        .configurable()
        .get("model")
        .cloned()
        .unwrap_or(Value::Null);
    Ok(Trace::update().seen([format!("{label} {} {model}", caller.name)]))
}

#[node]
async fn outer(_: &Trace, ctx: &NodeContext) -> Result<TraceUpdate, NodeError> {
    seen("outer", ctx)
}

#[node]
async fn inner(_: &Trace, ctx: &NodeContext) -> Result<TraceUpdate, NodeError> {
    seen("inner", ctx)
}

fn graph() -> CompiledGraph<Trace> {
    let mut child = StateGraph::<Trace>::new();
    child.add_node(inner).add_edge(START, inner);
    let child = child.compile().expect("the child compiles");
    let mut g = StateGraph::<Trace>::new();
    let sub = g.add_subgraph(Subgraph::shared("sub", child));
    g.add_node(outer)
        .add_edge(START, outer)
        .add_edge(outer, &sub)
        .add_edge(&sub, END);
    g.compile().expect("compiles")
}

#[tokio::test]
async fn configurable_and_context_reach_every_node_and_subgraph() {
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut values = serde_json::Map::new();
    values.insert("model".into(), json!("small"));
    let config = RunConfig::new().configurable(values).context(Caller {
        name: "ada".into(),
        calls: calls.clone(),
    });
    let out = graph()
        .invoke(Trace::update(), &config)
        .await
        .expect("runs");
    assert_eq!(
        out.values.seen,
        [r#"outer ada "small""#, r#"inner ada "small""#]
    );
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_missing_or_mistyped_context_is_an_error_naming_the_type() {
    let err = graph()
        .invoke(Trace::update(), &RunConfig::new())
        .await
        .expect_err("no context");
    let text = err.to_string();
    assert!(matches!(err, RunError::Node { .. }), "{err:?}");
    assert!(
        text.contains("Caller") && text.contains("RunConfig::context"),
        "{text}"
    );
    let err = graph()
        .invoke(Trace::update(), &RunConfig::new().context(7_u32))
        .await
        .expect_err("another type");
    let text = err.to_string();
    assert!(text.contains("Caller") && text.contains("u32"), "{text}");
}
