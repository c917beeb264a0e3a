//! Dropping a stream cancels its run cleanly: the node in flight is dropped at its
//! `await` (its code after it never runs), the thread stays at its last committed
//! checkpoint with finished siblings' writes kept, and `invoke(None)` completes the run
//! — also when the run was blocked on a full buffer, or had not started yet.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use stategraph::checkpoint::{CheckpointSource, InMemorySaver, ListOptions};
use stategraph::prelude::*;
use tokio::sync::Notify;

const PATIENCE: Duration = Duration::from_secs(10);

/// Waits (in real time, bounded) until `flag` is set.
async fn wait_for(flag: &AtomicBool, what: &str) {
    tokio::time::timeout(PATIENCE, async {
        while !flag.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("timed out waiting for {what}"));
}

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Chain {
    #[reducer(append)]
    log: Vec<String>,
}

// --- 1. drop mid-step ---------------------------------------------------------------

static SLOW_CALLS: AtomicUsize = AtomicUsize::new(0);
static SLOW_STARTED: Notify = Notify::const_new();
static SLOW_AFTER_AWAIT: AtomicBool = AtomicBool::new(false);
static SLOW_DROPPED: AtomicBool = AtomicBool::new(false);
static QUICK_CALLS: AtomicUsize = AtomicUsize::new(0);
static A_CALLS: AtomicUsize = AtomicUsize::new(0);
static C_CALLS: AtomicUsize = AtomicUsize::new(0);

/// Sets a flag when dropped: proves the cancelled future was dropped.
struct DropFlag(&'static AtomicBool);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[node]
fn a(_: &Chain) -> ChainUpdate {
    A_CALLS.fetch_add(1, Ordering::SeqCst);
    Chain::update().log(["a"])
}

/// Sync, sorts before `slow`: finishes (and its writes are saved) before `slow` starts.
#[node]
fn quick(_: &Chain) -> ChainUpdate {
    QUICK_CALLS.fetch_add(1, Ordering::SeqCst);
    Chain::update().log(["quick"])
}

/// The first call never finishes on its own; later calls return at once.
#[node]
async fn slow(_: &Chain) -> ChainUpdate {
    if SLOW_CALLS.fetch_add(1, Ordering::SeqCst) == 0 {
        let _guard = DropFlag(&SLOW_DROPPED);
        SLOW_STARTED.notify_one();
        std::future::pending::<()>().await;
        SLOW_AFTER_AWAIT.store(true, Ordering::SeqCst);
    }
    Chain::update().log(["slow"])
}

#[node]
fn c(_: &Chain) -> ChainUpdate {
    C_CALLS.fetch_add(1, Ordering::SeqCst);
    Chain::update().log(["c"])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_stream_mid_step_leaves_a_resumable_thread() {
    // START → a → {quick, slow} → c
    let graph = StateGraph::<Chain>::new()
        .add_node(a)
        .add_node(quick)
        .add_node(slow)
        .add_node(c)
        .add_edge(START, a)
        .add_edge(a, quick)
        .add_edge(a, slow)
        .add_edge(quick, c)
        .add_edge(slow, c)
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap();
    let cfg = RunConfig::new()
        .thread("dropped")
        .durability(Durability::Sync);
    let mut stream = graph.stream(
        Chain::update(),
        &cfg,
        StreamMode::VALUES | StreamMode::CHECKPOINTS | StreamMode::TASKS,
    );
    // Read until step 0's checkpoint.
    let committed = loop {
        let event = tokio::time::timeout(PATIENCE, stream.next())
            .await
            .expect("an event")
            .expect("the stream goes on")
            .expect("no error");
        if let StreamEvent::Checkpoint {
            config,
            metadata,
            next,
            ..
        } = event
            && metadata.step == 0
        {
            assert_eq!(metadata.source, CheckpointSource::Loop);
            assert_eq!(next, ["quick", "slow"]);
            break config;
        }
    };
    // Step 1 is running: `quick` finished, `slow` waits forever.
    tokio::time::timeout(PATIENCE, SLOW_STARTED.notified())
        .await
        .expect("slow starts");
    assert_eq!(QUICK_CALLS.load(Ordering::SeqCst), 1);
    drop(stream);
    wait_for(&SLOW_DROPPED, "the in-flight node to be dropped").await;
    assert!(!SLOW_AFTER_AWAIT.load(Ordering::SeqCst));

    // The thread is at step 0's checkpoint; `quick`'s writes are kept as pending writes.
    let snap = graph.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(snap.config.checkpoint_id, committed.checkpoint_id);
    assert_eq!(snap.metadata.step, 0);
    assert_eq!(snap.next, ["slow"]);
    let tasks: Vec<(String, bool)> = snap
        .tasks
        .iter()
        .map(|t| (t.id.clone(), t.has_writes))
        .collect();
    assert_eq!(
        tasks,
        [("1:quick".to_string(), true), ("1:slow".to_string(), false)]
    );
    assert_eq!(snap.values.log, ["a", "quick"]);
    let history = graph
        .get_state_history(&cfg, &ListOptions::new())
        .await
        .unwrap();
    assert_eq!(history.len(), 2, "input and step 0 only");

    // Nothing else runs in the background.
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(C_CALLS.load(Ordering::SeqCst), 0);
    assert_eq!(SLOW_CALLS.load(Ordering::SeqCst), 1);

    // Continuing runs only `slow`, then `c`.
    let out = graph.invoke(None, &cfg).await.unwrap();
    assert_eq!(out.values.log, ["a", "quick", "slow", "c"]);
    assert_eq!(A_CALLS.load(Ordering::SeqCst), 1);
    assert_eq!(QUICK_CALLS.load(Ordering::SeqCst), 1);
    assert_eq!(SLOW_CALLS.load(Ordering::SeqCst), 2);
    assert_eq!(C_CALLS.load(Ordering::SeqCst), 1);
    assert!(!SLOW_AFTER_AWAIT.load(Ordering::SeqCst));
    let done = graph.get_state(&cfg).await.unwrap().unwrap();
    assert!(done.next.is_empty());
    assert_eq!(done.metadata.step, 2);
}

// --- 2. drop while the run waits on a full buffer ----------------------------------

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Counter {
    #[reducer(add)]
    n: u64,
}

static TICKS: AtomicUsize = AtomicUsize::new(0);

#[node]
fn tick(_: &Counter) -> CounterUpdate {
    TICKS.fetch_add(1, Ordering::SeqCst);
    Counter::update().n(1)
}

fn counter_graph() -> CompiledGraph<Counter> {
    StateGraph::<Counter>::new()
        .add_node(tick)
        .add_edge(START, tick)
        .add_conditional_edges(
            tick,
            |s: &Counter| {
                if s.n < 500 {
                    Route::to(tick)
                } else {
                    Route::end()
                }
            },
            (tick, END),
        )
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_stream_blocked_on_its_buffer_leaves_a_resumable_thread() {
    let graph = counter_graph();
    let cfg = RunConfig::new().thread("blocked");
    let mut stream = graph.stream(Counter::update(), &cfg, StreamMode::VALUES);
    let first = stream.next().await.unwrap().unwrap();
    assert!(matches!(first, StreamEvent::Values { step: -1, .. }));
    // Let the run fill the buffer and block: wait until no step ran for 50 ms.
    let mut seen = TICKS.load(Ordering::SeqCst);
    let mut still = 0;
    for _ in 0..5_000 {
        tokio::time::sleep(Duration::from_millis(1)).await;
        let now = TICKS.load(Ordering::SeqCst);
        if now == seen {
            still += 1;
            if still == 50 {
                break;
            }
        } else {
            still = 0;
            seen = now;
        }
    }
    assert!(
        seen < 100,
        "the run is blocked on the buffer, ran {seen} steps"
    );
    drop(stream);
    tokio::time::sleep(Duration::from_millis(20)).await;
    let stopped_at = TICKS.load(Ordering::SeqCst);
    assert_eq!(stopped_at, seen, "nothing runs after the drop");

    // The run was blocked sending step k's values: step k-1 is the last checkpoint,
    // and step k's task finished, so its writes are kept as pending writes.
    let snap = graph.get_state(&cfg).await.unwrap().unwrap();
    let step = snap.metadata.step;
    assert!(step >= 60, "stopped at step {step}");
    assert_eq!(snap.tasks.len(), 1);
    assert_eq!(snap.tasks[0].id, format!("{}:tick", step + 1));
    assert!(snap.tasks[0].has_writes);
    assert!(snap.next.is_empty(), "{:?}", snap.next);
    assert_eq!(snap.values.n, u64::try_from(step + 2).unwrap());
    assert_eq!(u64::try_from(stopped_at).unwrap(), snap.values.n);

    let out = graph.invoke(None, &cfg).await.unwrap();
    assert_eq!(out.values.n, 500);
    // The finished task of the interrupted step is not run again.
    assert_eq!(TICKS.load(Ordering::SeqCst), 500);
}

// --- 3. drop before the run started -------------------------------------------------

static NEVER_CALLS: AtomicUsize = AtomicUsize::new(0);

#[node]
fn never(_: &Counter) -> CounterUpdate {
    NEVER_CALLS.fetch_add(1, Ordering::SeqCst);
    Counter::update().n(1)
}

#[tokio::test]
async fn dropping_an_unpolled_stream_runs_nothing() {
    let graph = StateGraph::<Counter>::new()
        .add_node(never)
        .add_edge(START, never)
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap();
    let cfg = RunConfig::new().thread("unpolled");
    // On this current-thread runtime the run's task has not been polled yet.
    drop(graph.stream(Counter::update(), &cfg, StreamMode::ALL));
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(NEVER_CALLS.load(Ordering::SeqCst), 0);
    assert!(graph.get_state(&cfg).await.unwrap().is_none());
    // The thread is untouched: a new run starts it normally.
    let out = graph.invoke(Counter::update(), &cfg).await.unwrap();
    assert_eq!(out.values.n, 1);
}
