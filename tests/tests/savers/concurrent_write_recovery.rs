//! Two nodes writing one last-value channel in one superstep fail the run; the
//! failed step is not committed and the thread stays usable from its last checkpoint
//! — under every durability mode and on every saver:
//!
//! - the run waits for its saves, so `get_state` right after shows the thread at the
//!   step before, with the step's tasks next and the rejection as their error;
//! - the rejected writes are never applied again: continuing with the same graph
//!   fails the same way (not with a different error about stored writes), and
//!   continuing with a fixed graph runs the whole step again and finishes.
//!
//! The PostgreSQL cases need a server: set `STATEGRAPH_POSTGRES_URL`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use stategraph::checkpoint::CheckpointSaver;
use stategraph::prelude::*;
use stategraph::{InvalidUpdate, NodeHandle};
use stategraph_postgres::{PostgresOptions, PostgresSaver};
use stategraph_sqlite::SqliteSaver;
use stategraph_tests::servers;

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Claim {
    /// Last value: one writer per step.
    owner: String,
    helper: String,
    #[reducer(append)]
    trace: Vec<String>,
}

#[derive(Default)]
struct Calls {
    first: AtomicUsize,
    second: AtomicUsize,
}

/// `first` and `second` run in one step; with `fixed == false` both write `owner`.
fn graph(saver: Arc<dyn CheckpointSaver>, calls: &Arc<Calls>, fixed: bool) -> CompiledGraph<Claim> {
    let mut g = StateGraph::<Claim>::new();
    let c = calls.clone();
    let first: NodeHandle<Claim> = g.add_node_fn("first", move |_: &Claim| {
        c.first.fetch_add(1, Ordering::SeqCst);
        Claim::update().owner("first").trace(["first"])
    });
    let c = calls.clone();
    let second = g.add_node_fn("second", move |_: &Claim| {
        c.second.fetch_add(1, Ordering::SeqCst);
        if fixed {
            Claim::update().helper("second").trace(["second"])
        } else {
            Claim::update().owner("second").trace(["second"])
        }
    });
    let wrap_up = g.add_node_fn("wrap_up", |c: &Claim| {
        Claim::update().trace([format!("done by {} and {}", c.owner, c.helper)])
    });
    g.add_edge(START, &first)
        .add_edge(START, &second)
        .add_edge([first, second], wrap_up);
    g.compile_with(CompileOptions::new().shared_checkpointer(saver))
        .expect("the graph compiles")
}

fn assert_conflict(err: &RunError) {
    match err {
        RunError::InvalidUpdate {
            step: Some(0),
            source: InvalidUpdate::ConcurrentWrites { channel, writers },
        } => {
            assert_eq!(*channel, "owner");
            assert_eq!(writers, &["first", "second"]);
        }
        other => panic!("expected the step-0 conflict on `owner`, got {other:?}"),
    }
}

async fn conflict_then_fix(saver: Arc<dyn CheckpointSaver>, durability: Durability) {
    let thread = RunConfig::new()
        .thread(format!("claim-{durability:?}"))
        .durability(durability);
    let calls = Arc::new(Calls::default());
    let buggy = graph(saver.clone(), &calls, false);

    let err = buggy
        .invoke(Claim::update().trace(["input"]), &thread)
        .await
        .unwrap_err();
    assert_conflict(&err);

    // Right after the failed run (the run waited for its saves, whatever the mode):
    // the thread is at its input, the conflicting step is next, and each of its
    // tasks says why it must run again.
    let state = buggy
        .get_state(&thread)
        .await
        .expect("get_state reads a thread whose step was rejected")
        .expect("the failed run saved where it stopped");
    assert_eq!(state.values.trace, ["input"], "{durability:?}");
    assert_eq!(state.values.owner, "");
    assert_eq!(state.next, ["first", "second"], "{durability:?}");
    for task in &state.tasks {
        assert!(!task.has_writes, "{task:?}");
        let error = task.error.as_deref().unwrap_or_default();
        assert!(
            error.contains("channel `owner` received 2 writes"),
            "{task:?}"
        );
    }

    // Continuing with the same (still buggy) graph runs the step again and fails in
    // the same way: nothing of the rejected attempt is replayed.
    let again = buggy.invoke(None, &thread).await.unwrap_err();
    assert_conflict(&again);
    assert_eq!(calls.first.load(Ordering::SeqCst), 2);
    assert_eq!(calls.second.load(Ordering::SeqCst), 2);

    // Once the node is fixed, continuing re-runs the whole step and finishes.
    let fixed = graph(saver, &calls, true);
    let out = fixed
        .invoke(None, &thread)
        .await
        .expect("the fixed graph finishes");
    assert_eq!(out.values.owner, "first");
    assert_eq!(out.values.helper, "second");
    assert_eq!(
        out.values.trace,
        ["input", "first", "second", "done by first and second"]
    );
    assert_eq!(calls.first.load(Ordering::SeqCst), 3);
    assert_eq!(calls.second.load(Ordering::SeqCst), 3);
    let state = fixed.get_state(&thread).await.unwrap().unwrap();
    assert!(state.tasks.is_empty() && state.interrupts.is_empty());
    assert_eq!(state.values, out.values);
}

async fn every_mode(saver: Arc<dyn CheckpointSaver>) {
    for durability in [Durability::Sync, Durability::Async, Durability::Exit] {
        conflict_then_fix(saver.clone(), durability).await;
    }
}

#[tokio::test]
async fn in_memory_saver() {
    every_mode(Arc::new(InMemorySaver::new())).await;
}

#[tokio::test]
async fn sqlite_saver() {
    let dir = tempfile::tempdir().unwrap();
    let saver = SqliteSaver::open(dir.path().join("claims.sqlite")).unwrap();
    every_mode(Arc::new(saver)).await;
}

#[tokio::test]
async fn postgres_saver() {
    let Some(url) = servers::postgres_url("concurrent_write_recovery::postgres_saver") else {
        return;
    };
    let schema = servers::fresh_schema("conflict");
    let saver = PostgresSaver::connect_with(&url, PostgresOptions::new().schema(&schema))
        .await
        .unwrap();
    every_mode(Arc::new(saver)).await;
    tokio::task::spawn_blocking(move || servers::drop_schema(&url, &schema))
        .await
        .unwrap();
}
