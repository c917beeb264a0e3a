//! Closure nodes with the task's context: `add_node_fn_ctx` closures can interrupt
//! and read their step and attempt, like `#[node]` functions, under any name the
//! graph accepts.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use serde_json::json;
use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Order {
    #[reducer(append)]
    log: Vec<String>,
    approved_by: Option<String>,
}

#[tokio::test]
async fn a_closure_interrupts_and_resumes_like_a_node_function() {
    let mut g = StateGraph::<Order>::new();
    let pack = g.add_node_fn("pack", |_: &Order| Order::update().log(["packed"]));
    let review = g.add_node_fn_ctx("manager review", |o: &Order, ctx: &NodeContext| {
        let who: String = ctx.interrupt(json!({ "log": o.log, "step": ctx.step() }))?;
        Ok::<_, NodeError>(Order::update().approved_by(Some(who.clone())).log([format!(
            "{} approved by {who} at step {}",
            ctx.node(),
            ctx.step()
        )]))
    });
    g.add_edge(START, &pack).add_edge(pack, review);
    let graph = g
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap();
    let thread = RunConfig::new().thread("order-1");

    let paused = graph.invoke(Order::update(), &thread).await.unwrap();
    assert_eq!(paused.interrupts.len(), 1);
    assert_eq!(paused.interrupts[0].node, "manager review");
    assert_eq!(
        paused.interrupts[0].value,
        json!({ "log": ["packed"], "step": 1 })
    );

    let done = graph.invoke(Command::resume("ada"), &thread).await.unwrap();
    assert_eq!(done.values.approved_by.as_deref(), Some("ada"));
    assert_eq!(
        done.values.log,
        ["packed", "manager review approved by ada at step 1"]
    );
}

#[tokio::test]
async fn a_closure_sees_its_attempt_under_a_retry_policy() {
    let calls = Arc::new(AtomicU32::new(0));
    let seen = calls.clone();
    let mut g = StateGraph::<Order>::new();
    let flaky = g.add_node_fn_ctx("flaky fetch", move |_: &Order, ctx: &NodeContext| {
        seen.fetch_add(1, Ordering::SeqCst);
        if ctx.attempt() < 3 {
            return Err(NodeError::msg("timeout"));
        }
        Ok(Order::update().log([format!("fetched on attempt {}", ctx.attempt())]))
    });
    g.add_edge(START, &flaky).retry(
        flaky,
        RetryPolicy::new()
            .max_attempts(3)
            .initial_interval(Duration::ZERO),
    );
    let graph = g.compile().unwrap();
    let out = graph
        .invoke(Order::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.values.log, ["fetched on attempt 3"]);
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}
