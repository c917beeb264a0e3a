//! What "a superstep's tasks run concurrently" means for plain (sync) nodes, as the
//! tutorial documents it: they are called inline, in task order, before the step's
//! `async` tasks are first polled; a failing sync node stops the step before later
//! tasks start; blocking work belongs in an `async` node that hands it to the
//! blocking pool, where it overlaps with its siblings.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Trace {
    #[reducer(append)]
    log: Vec<String>,
}

static ORDER: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());

#[node]
async fn a_async(_: &Trace) -> TraceUpdate {
    ORDER.lock().unwrap().push("a_async");
    Trace::update()
}

#[node]
fn b_sync(_: &Trace) -> TraceUpdate {
    ORDER.lock().unwrap().push("b_sync");
    Trace::update()
}

#[node]
fn c_sync(_: &Trace) -> TraceUpdate {
    ORDER.lock().unwrap().push("c_sync");
    Trace::update()
}

#[tokio::test]
async fn sync_nodes_run_inline_in_task_order_before_async_ones_are_polled() {
    let g = StateGraph::<Trace>::new()
        .add_node(a_async)
        .add_node(b_sync)
        .add_node(c_sync)
        .add_edge(START, a_async)
        .add_edge(START, b_sync)
        .add_edge(START, c_sync)
        .compile()
        .unwrap();
    g.invoke(Trace::update(), &RunConfig::new()).await.unwrap();
    // `a_async` is first in task order, yet first polled after the sync tasks ran.
    assert_eq!(*ORDER.lock().unwrap(), ["b_sync", "c_sync", "a_async"]);
}

static SLOW_FINISHED: AtomicBool = AtomicBool::new(false);
static LATER_RAN: AtomicBool = AtomicBool::new(false);

#[node]
async fn a_slow_async(_: &Trace) -> TraceUpdate {
    tokio::time::sleep(Duration::from_millis(20)).await;
    SLOW_FINISHED.store(true, Ordering::SeqCst);
    Trace::update()
}

#[node]
fn b_fails(_: &Trace) -> Result<TraceUpdate, NodeError> {
    Err(NodeError::msg("bad input"))
}

#[node]
fn c_later(_: &Trace) -> TraceUpdate {
    LATER_RAN.store(true, Ordering::SeqCst);
    Trace::update()
}

#[tokio::test]
async fn a_failing_sync_node_stops_the_step_before_later_tasks_start() {
    let g = StateGraph::<Trace>::new()
        .add_node(a_slow_async)
        .add_node(b_fails)
        .add_node(c_later)
        .add_edge(START, a_slow_async)
        .add_edge(START, b_fails)
        .add_edge(START, c_later)
        .compile()
        .unwrap();
    let err = g
        .invoke(Trace::update(), &RunConfig::new())
        .await
        .unwrap_err();
    assert!(matches!(&err, RunError::Node { node, .. } if node == "b_fails"));
    assert!(!LATER_RAN.load(Ordering::SeqCst), "c_later never started");
    // The async sibling was cancelled, not left running.
    tokio::time::sleep(Duration::from_millis(60)).await;
    assert!(!SLOW_FINISHED.load(Ordering::SeqCst));
}

static EVENTS: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());

#[node]
async fn blocking_read(_: &Trace) -> Result<TraceUpdate, NodeError> {
    tokio::task::spawn_blocking(|| {
        std::thread::sleep(Duration::from_millis(300));
        EVENTS.lock().unwrap().push("read done");
    })
    .await
    .map_err(|e| NodeError::msg(e.to_string()))?;
    Ok(Trace::update().log(["read"]))
}

#[node]
async fn ticker(_: &Trace) -> TraceUpdate {
    tokio::time::sleep(Duration::from_millis(10)).await;
    EVENTS.lock().unwrap().push("ticked");
    Trace::update().log(["ticked"])
}

#[tokio::test]
async fn blocking_work_on_the_blocking_pool_overlaps_with_its_siblings() {
    let g = StateGraph::<Trace>::new()
        .add_node(blocking_read)
        .add_node(ticker)
        .add_edge(START, blocking_read)
        .add_edge(START, ticker)
        .compile()
        .unwrap();
    let out = g.invoke(Trace::update(), &RunConfig::new()).await.unwrap();
    assert_eq!(out.values.log, ["read", "ticked"]);
    // The sibling finished while the blocking read was still running.
    assert_eq!(*EVENTS.lock().unwrap(), ["ticked", "read done"]);
}
