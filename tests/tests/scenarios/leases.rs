//! A run's lease and its retry: a run whose lease lapsed saves nothing more and starts
//! no step; another attempt under the same run id continues from what the first one
//! saved, so no saved step and no input is applied twice.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use stategraph::checkpoint::{CheckpointError, ListOptions};
use stategraph::prelude::*;
use stategraph::{RunInput, RunLease};

#[derive(GraphState, Clone, Debug, Default)]
struct Job {
    /// How long `slow` takes.
    delay_ms: u64,
    #[reducer(append)]
    log: Vec<String>,
}

/// Runs of `slow` and `last` in the one test whose input takes `LAPSE_MS` (the tests
/// of this file run at once).
static SLOW_RUNS: AtomicU32 = AtomicU32::new(0);
static LAST_RUNS: AtomicU32 = AtomicU32::new(0);
const LAPSE_MS: u64 = 400;

#[node]
async fn first(_s: &Job) -> JobUpdate {
    Job::update().log(["first".to_string()])
}

#[node]
async fn slow(s: &Job) -> JobUpdate {
    if s.delay_ms == LAPSE_MS {
        SLOW_RUNS.fetch_add(1, Ordering::SeqCst);
    }
    tokio::time::sleep(Duration::from_millis(s.delay_ms)).await;
    Job::update().log(["slow".to_string()])
}

#[node]
async fn last(s: &Job) -> JobUpdate {
    if s.delay_ms == LAPSE_MS {
        LAST_RUNS.fetch_add(1, Ordering::SeqCst);
    }
    Job::update().log(["last".to_string()])
}

fn graph() -> CompiledGraph<Job> {
    let mut g = StateGraph::<Job>::new();
    g.add_node(first)
        .add_node(slow)
        .add_node(last)
        .add_edge(START, first)
        .add_edge(first, slow)
        .add_edge(slow, last)
        .add_edge(last, END);
    g.compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap()
}

fn input(delay_ms: u64) -> JobUpdate {
    Job::update().delay_ms(delay_ms).log(["input".to_string()])
}

fn lapsed(e: &RunError) -> bool {
    matches!(e, RunError::Checkpoint(CheckpointError::LeaseLapsed { .. }))
}

async fn log_of(g: &CompiledGraph<Job>, thread: &str) -> Vec<String> {
    let state = g.get_state(&RunConfig::new().thread(thread)).await.unwrap();
    state.map(|s| s.values.log).unwrap_or_default()
}

#[tokio::test]
async fn a_lapsed_lease_saves_nothing_more_and_a_retry_finishes_the_run_once() {
    let g = graph();
    // The lease runs out while `slow` works: its writes are refused, `last` never
    // starts.
    let lease = RunLease::until(Instant::now() + Duration::from_millis(150));
    let attempt = RunConfig::new()
        .thread("lapse")
        .run_id("run-1")
        .lease(lease);
    let err = g.invoke(input(LAPSE_MS), &attempt).await.unwrap_err();
    assert!(lapsed(&err), "{err}");
    assert_eq!(log_of(&g, "lapse").await, ["input", "first"]);
    assert_eq!(LAST_RUNS.load(Ordering::SeqCst), 0);

    // The next attempt, with the same input: continues after `first`.
    let lease = RunLease::until(Instant::now() + Duration::from_secs(30));
    let retry = RunConfig::new()
        .thread("lapse")
        .run_id("run-1")
        .lease(lease)
        .retry();
    let out = g.invoke(input(LAPSE_MS), &retry).await.unwrap();
    assert_eq!(out.values.log, ["input", "first", "slow", "last"]);
    // `slow` ran again (its writes were never saved), `last` once.
    assert_eq!(SLOW_RUNS.load(Ordering::SeqCst), 2);
    assert_eq!(LAST_RUNS.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_retry_of_a_run_that_finished_runs_nothing_again() {
    let g = graph();
    let config = RunConfig::new().thread("done").run_id("run-2");
    g.invoke(input(0), &config).await.unwrap();
    let checkpoints = g
        .get_state_history(&config, &ListOptions::default())
        .await
        .unwrap()
        .len();
    let out = g.invoke(input(0), &config.clone().retry()).await.unwrap();
    assert_eq!(out.values.log, ["input", "first", "slow", "last"]);
    let after = g
        .get_state_history(&config, &ListOptions::default())
        .await
        .unwrap()
        .len();
    assert_eq!(after, checkpoints, "a finished run's retry saves nothing");
}

#[tokio::test]
async fn a_retry_after_another_run_applies_its_input() {
    let g = graph();
    let thread = RunConfig::new().thread("other");
    g.invoke(input(0), &thread.clone().run_id("earlier"))
        .await
        .unwrap();
    // Its first attempt saved nothing: the thread's latest is another run's.
    let out = g
        .invoke(input(0), &thread.clone().run_id("later").retry())
        .await
        .unwrap();
    assert_eq!(
        out.values.log,
        [
            "input", "first", "slow", "last", "input", "first", "slow", "last"
        ]
    );
}

#[tokio::test]
async fn a_lease_that_lapsed_before_the_run_started_runs_no_step() {
    let g = graph();
    let lease = RunLease::until(Instant::now());
    let config = RunConfig::new().thread("never").lease(lease);
    let err = g
        .invoke(RunInput::Update(input(0)), &config)
        .await
        .unwrap_err();
    assert!(lapsed(&err), "{err}");
    assert!(log_of(&g, "never").await.is_empty());
}
