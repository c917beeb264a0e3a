//! Failures: a failing node cancels its in-flight siblings and `invoke` returns the
//! node's own error; two writes to a last-value channel in one superstep fail the run
//! naming the channel and both writers.

use std::error::Error as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use stategraph::InvalidUpdate;
use stategraph::prelude::*;
use tokio::time::Instant;

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Job {
    #[reducer(append)]
    trace: Vec<String>,
    /// Last value.
    owner: String,
    #[reducer(add)]
    count: u32,
}

fn visit(ctx: &NodeContext) -> JobUpdate {
    Job::update().trace([format!("{}@{}", ctx.node(), ctx.step())])
}

#[derive(Debug, PartialEq, Eq)]
struct Boom {
    code: u32,
}

impl std::fmt::Display for Boom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "boom #{}", self.code)
    }
}

impl std::error::Error for Boom {}

/// Sets a flag when dropped: proves a cancelled future was dropped, not leaked.
struct DropFlag(&'static AtomicBool);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

static SLOWPOKE_STARTED: AtomicBool = AtomicBool::new(false);
static SLOWPOKE_FINISHED: AtomicBool = AtomicBool::new(false);
static SLOWPOKE_DROPPED: AtomicBool = AtomicBool::new(false);

#[node]
async fn fails_fast(_s: &Job) -> Result<JobUpdate, Boom> {
    tokio::time::sleep(Duration::from_millis(1)).await;
    Err(Boom { code: 7 })
}

#[node]
async fn slowpoke(_s: &Job, ctx: &NodeContext) -> JobUpdate {
    SLOWPOKE_STARTED.store(true, Ordering::SeqCst);
    let _guard = DropFlag(&SLOWPOKE_DROPPED);
    tokio::time::sleep(Duration::from_secs(10)).await;
    SLOWPOKE_FINISHED.store(true, Ordering::SeqCst);
    visit(ctx)
}

#[tokio::test(start_paused = true)]
async fn failing_node_cancels_a_sleeping_sibling_and_returns_its_own_error() {
    let graph = StateGraph::<Job>::new()
        .add_node(slowpoke)
        .add_node(fails_fast)
        .add_edge(START, slowpoke)
        .add_edge(START, fails_fast)
        .compile()
        .unwrap();

    let started = Instant::now();
    let err = graph
        .invoke(Job::update(), &RunConfig::new())
        .await
        .unwrap_err();
    let elapsed = started.elapsed();

    // Returned as soon as the failing node failed, not after the sibling's 10 s.
    assert_eq!(elapsed, Duration::from_millis(1));
    match &err {
        RunError::Node { node, step, .. } => {
            assert_eq!(node, "fails_fast");
            assert_eq!(*step, 0);
        }
        other => panic!("expected RunError::Node, got {other:?}"),
    }
    let node_error = err.node_error().expect("a node error");
    assert_eq!(node_error.downcast_ref::<Boom>(), Some(&Boom { code: 7 }));
    assert_eq!(node_error.to_string(), "boom #7");
    // The error chain reaches the node's error too.
    assert_eq!(err.source().unwrap().to_string(), "boom #7");
    assert!(err.to_string().contains("fails_fast"), "{err}");

    // The sibling started, was dropped mid-sleep, and never completes.
    assert!(SLOWPOKE_STARTED.load(Ordering::SeqCst));
    assert!(SLOWPOKE_DROPPED.load(Ordering::SeqCst));
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert!(!SLOWPOKE_FINISHED.load(Ordering::SeqCst));
}

static LATE_SIBLING_FINISHED: AtomicBool = AtomicBool::new(false);

/// Sorts before `b_sync_fails`, so it is started (pushed in flight) first.
#[node]
async fn a_async_sibling(_s: &Job, ctx: &NodeContext) -> JobUpdate {
    tokio::time::sleep(Duration::from_secs(10)).await;
    LATE_SIBLING_FINISHED.store(true, Ordering::SeqCst);
    visit(ctx)
}

#[node]
fn b_sync_fails(_s: &Job) -> Result<JobUpdate, Boom> {
    Err(Boom { code: 2 })
}

#[tokio::test(start_paused = true)]
async fn failing_sync_node_cancels_async_siblings() {
    let graph = StateGraph::<Job>::new()
        .add_node(b_sync_fails)
        .add_node(a_async_sibling)
        .add_edge(START, b_sync_fails)
        .add_edge(START, a_async_sibling)
        .compile()
        .unwrap();
    let started = Instant::now();
    let err = graph
        .invoke(Job::update(), &RunConfig::new())
        .await
        .unwrap_err();
    assert_eq!(started.elapsed(), Duration::ZERO);
    assert!(
        matches!(&err, RunError::Node { node, step: 0, .. } if node == "b_sync_fails"),
        "{err:?}"
    );
    assert_eq!(
        err.node_error().unwrap().downcast_ref::<Boom>(),
        Some(&Boom { code: 2 })
    );
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert!(!LATE_SIBLING_FINISHED.load(Ordering::SeqCst));
}

#[node]
fn first(_s: &Job, ctx: &NodeContext) -> JobUpdate {
    visit(ctx)
}

#[node]
fn second(_s: &Job, ctx: &NodeContext) -> JobUpdate {
    visit(ctx)
}

#[node]
async fn third_fails(s: &Job) -> Result<JobUpdate, Boom> {
    tokio::task::yield_now().await;
    Err(Boom {
        code: u32::try_from(s.trace.len()).unwrap(),
    })
}

#[tokio::test]
async fn failure_in_a_later_step_names_that_step_and_node() {
    let graph = StateGraph::<Job>::new()
        .add_node(first)
        .add_node(second)
        .add_node(third_fails)
        .add_edge(START, first)
        .add_edge(first, second)
        .add_edge(second, third_fails)
        .compile()
        .unwrap();
    let err = graph
        .invoke(Job::update(), &RunConfig::new())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, RunError::Node { node, step: 2, .. } if node == "third_fails"),
        "{err:?}"
    );
    // The failing node saw both earlier writes.
    assert_eq!(
        err.node_error().unwrap().downcast_ref::<Boom>(),
        Some(&Boom { code: 2 })
    );
    assert_eq!(
        err.to_string(),
        "node `third_fails` failed in superstep 2: boom #2"
    );
}

#[tokio::test]
async fn closure_node_errors_propagate_with_the_node_name() {
    let mut g = StateGraph::<Job>::new();
    let flaky = g.add_node_fn("flaky", |s: &Job| {
        if s.count > 0 {
            Err(Boom { code: s.count })
        } else {
            Ok(Job::update().owner("flaky"))
        }
    });
    g.add_edge(START, &flaky);
    let graph = g.compile().unwrap();

    let out = graph
        .invoke(Job::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.values.owner, "flaky");

    let err = graph
        .invoke(Job::update().count(9), &RunConfig::new())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, RunError::Node { node, .. } if node == "flaky"),
        "{err:?}"
    );
    assert_eq!(
        err.node_error().unwrap().downcast_ref::<Boom>(),
        Some(&Boom { code: 9 })
    );
}

#[node]
fn zed(_s: &Job) -> JobUpdate {
    Job::update().owner("zed")
}

#[node]
async fn alpha(_s: &Job) -> JobUpdate {
    tokio::task::yield_now().await;
    Job::update().owner("alpha")
}

#[node]
fn mid(_s: &Job) -> JobUpdate {
    Job::update().count(1)
}

#[tokio::test]
async fn two_writes_to_a_last_value_channel_in_one_step_fail_naming_both_writers() {
    // Added zed first: the writers are still listed in name (apply) order.
    let graph = StateGraph::<Job>::new()
        .add_node(zed)
        .add_node(mid)
        .add_node(alpha)
        .add_edge(START, zed)
        .add_edge(START, mid)
        .add_edge(START, alpha)
        .compile()
        .unwrap();
    let err = graph
        .invoke(Job::update(), &RunConfig::new())
        .await
        .unwrap_err();
    match &err {
        RunError::InvalidUpdate {
            step,
            source: InvalidUpdate::ConcurrentWrites { channel, writers },
        } => {
            assert_eq!(*step, Some(0));
            assert_eq!(*channel, "owner");
            assert_eq!(writers, &["alpha", "zed"]);
        }
        other => panic!("expected ConcurrentWrites, got {other:?}"),
    }
    let text = err.to_string();
    assert!(
        text.contains("owner") && text.contains("alpha") && text.contains("zed"),
        "{text}"
    );
}

#[tokio::test]
async fn last_value_writes_in_different_steps_are_fine_but_a_later_conflict_names_its_step() {
    // first → zed (step 1, alone: fine) ; first → second → [alpha, zed] (step 2: conflict)
    let graph = StateGraph::<Job>::new()
        .add_node(first)
        .add_node(second)
        .add_node(zed)
        .add_node(alpha)
        .add_edge(START, first)
        .add_edge(first, zed)
        .add_edge(first, second)
        .add_edge(second, zed)
        .add_edge(second, alpha)
        .compile()
        .unwrap();
    let err = graph
        .invoke(Job::update(), &RunConfig::new())
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            RunError::InvalidUpdate {
                step: Some(2),
                source: InvalidUpdate::ConcurrentWrites { channel: "owner", writers },
            } if writers == &["alpha", "zed"]
        ),
        "{err:?}"
    );
}
