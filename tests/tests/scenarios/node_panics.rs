//! A node that panics fails the run like a node that returns an error: `invoke` and
//! `stream` return `RunError::Node` carrying a `NodePanic` with the panic's message,
//! finished siblings' writes are kept as pending writes, the thread is released, and
//! continuing re-runs only the task that panicked.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use stategraph::NodePanic;
use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Job {
    #[reducer(append)]
    trace: Vec<String>,
}

static STEADY_RUNS: AtomicUsize = AtomicUsize::new(0);
static FLAKY_SHOULD_PANIC: AtomicBool = AtomicBool::new(true);

#[node]
async fn steady(_: &Job) -> JobUpdate {
    STEADY_RUNS.fetch_add(1, Ordering::SeqCst);
    Job::update().trace(["steady"])
}

/// Panics inside its future (after an await point) while the flag is set.
#[node]
async fn flaky(_: &Job) -> JobUpdate {
    tokio::time::sleep(Duration::from_millis(5)).await;
    if FLAKY_SHOULD_PANIC.load(Ordering::SeqCst) {
        let index = [1, 2, 3].len() + 4;
        panic!("index {index} out of range");
    }
    Job::update().trace(["flaky"])
}

#[node]
fn sync_panics(_: &Job) -> JobUpdate {
    panic!("sync node gave up")
}

#[node]
fn panics_with_a_number(_: &Job) -> JobUpdate {
    std::panic::panic_any(42_u32)
}

fn panic_of(err: &RunError) -> &NodePanic {
    err.node_error()
        .and_then(|e| e.downcast_ref::<NodePanic>())
        .unwrap_or_else(|| panic!("expected a node panic, got {err:?}"))
}

#[tokio::test]
async fn an_async_node_panic_is_a_node_error_and_the_thread_continues() {
    FLAKY_SHOULD_PANIC.store(true, Ordering::SeqCst);
    STEADY_RUNS.store(0, Ordering::SeqCst);
    let graph = StateGraph::<Job>::new()
        .add_node(steady)
        .add_node(flaky)
        .add_edge(START, steady)
        .add_edge(START, flaky)
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap();
    let thread = RunConfig::new().thread("panics");

    let err = graph.invoke(Job::update(), &thread).await.unwrap_err();
    assert!(
        matches!(&err, RunError::Node { node, step: 0, .. } if node == "flaky"),
        "{err:?}"
    );
    assert_eq!(panic_of(&err).message, "index 7 out of range");
    assert!(
        err.to_string()
            .contains("the node panicked: index 7 out of range")
    );

    // The sibling's writes are saved; the panicked task is next, with its error.
    let state = graph.get_state(&thread).await.unwrap().unwrap();
    assert_eq!(state.values.trace, ["steady"]);
    assert_eq!(state.next, ["flaky"]);
    let flaky_task = state.tasks.iter().find(|t| t.node == "flaky").unwrap();
    assert!(
        flaky_task
            .error
            .as_deref()
            .is_some_and(|e| e.contains("index 7 out of range")),
        "{flaky_task:?}"
    );

    // The thread was released: a continue takes it at once and re-runs only `flaky`.
    FLAKY_SHOULD_PANIC.store(false, Ordering::SeqCst);
    let out = graph.invoke(None, &thread).await.unwrap();
    assert_eq!(out.values.trace, ["flaky", "steady"]);
    assert_eq!(STEADY_RUNS.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_sync_node_panic_is_a_node_error_without_a_checkpointer() {
    let graph = StateGraph::<Job>::new()
        .add_node(sync_panics)
        .add_edge(START, sync_panics)
        .compile()
        .unwrap();
    let err = graph
        .invoke(Job::update(), &RunConfig::new())
        .await
        .unwrap_err();
    assert!(matches!(&err, RunError::Node { node, .. } if node == "sync_panics"));
    assert_eq!(panic_of(&err).message, "sync node gave up");
}

#[tokio::test]
async fn a_panic_payload_that_is_not_a_string_still_fails_clearly() {
    let graph = StateGraph::<Job>::new()
        .add_node(panics_with_a_number)
        .add_edge(START, panics_with_a_number)
        .compile()
        .unwrap();
    let err = graph
        .invoke(Job::update(), &RunConfig::new())
        .await
        .unwrap_err();
    assert_eq!(panic_of(&err).message, "(a panic without a message)");
}

#[tokio::test]
async fn a_streamed_run_reports_the_panic_as_its_last_item() {
    let graph = StateGraph::<Job>::new()
        .add_node(sync_panics)
        .add_edge(START, sync_panics)
        .compile()
        .unwrap();
    let items: Vec<_> = graph
        .stream(Job::update(), &RunConfig::new(), StreamMode::VALUES)
        .collect()
        .await;
    let last = items.last().expect("the stream ends with the error");
    let err = last.as_ref().expect_err("the run failed");
    assert_eq!(panic_of(err).message, "sync node gave up");
}

static RETRIED_CALLS: AtomicUsize = AtomicUsize::new(0);

#[node]
fn panics_every_time(_: &Job) -> JobUpdate {
    RETRIED_CALLS.fetch_add(1, Ordering::SeqCst);
    panic!("still broken")
}

#[tokio::test]
async fn a_panic_is_not_retried_by_a_retry_policy() {
    let graph = StateGraph::<Job>::new()
        .add_node(panics_every_time)
        .retry(
            panics_every_time,
            RetryPolicy::new()
                .max_attempts(5)
                .initial_interval(Duration::ZERO),
        )
        .add_edge(START, panics_every_time)
        .compile()
        .unwrap();
    let err = graph
        .invoke(Job::update(), &RunConfig::new())
        .await
        .unwrap_err();
    assert_eq!(panic_of(&err).message, "still broken");
    assert_eq!(RETRIED_CALLS.load(Ordering::SeqCst), 1);
}
