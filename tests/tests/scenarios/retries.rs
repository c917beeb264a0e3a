//! Retry policies under paused tokio time: attempts are counted from 1, the waits follow
//! the exponential backoff exactly, `max_attempts` bounds the attempts and `retry_on`
//! picks which errors are retried.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use stategraph::prelude::*;
use tokio::time::Instant;

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Flaky {
    #[reducer(append)]
    trace: Vec<String>,
    /// How many attempts fail before one succeeds.
    failures: u32,
    /// The attempt that succeeded.
    succeeded_on: u32,
}

#[derive(Debug, PartialEq, Eq)]
enum Outage {
    Transient(u32),
    Permanent,
}

impl std::fmt::Display for Outage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outage::Transient(attempt) => write!(f, "transient outage on attempt {attempt}"),
            Outage::Permanent => f.write_str("permanent outage"),
        }
    }
}

impl std::error::Error for Outage {}

/// Each test gets its own flaky node and attempt log, so tests can run in parallel.
macro_rules! flaky_node {
    ($name:ident, $log:ident) => {
        static $log: Mutex<Vec<(u32, Instant)>> = Mutex::new(Vec::new());

        /// Fails its first `failures` attempts (after a 10 ms call), logging each
        /// attempt and when it started.
        #[node]
        async fn $name(s: &Flaky, ctx: &NodeContext) -> Result<FlakyUpdate, Outage> {
            $log.lock().unwrap().push((ctx.attempt(), Instant::now()));
            tokio::time::sleep(Duration::from_millis(10)).await;
            if ctx.attempt() <= s.failures {
                Err(Outage::Transient(ctx.attempt()))
            } else {
                Ok(Flaky::update()
                    .trace([format!("{}@{}", ctx.node(), ctx.step())])
                    .succeeded_on(ctx.attempt()))
            }
        }
    };
}

fn graph_with(
    node: stategraph::NodeDef<Flaky, Flaky>,
    policy: RetryPolicy,
) -> CompiledGraph<Flaky> {
    StateGraph::<Flaky>::new()
        .add_node(node)
        .add_edge(START, node)
        .retry(node, policy)
        .compile()
        .unwrap()
}

fn policy() -> RetryPolicy {
    // The exact backoff schedule is what these tests check: no jitter.
    RetryPolicy::new()
        .initial_interval(Duration::from_millis(100))
        .backoff_factor(2.0)
        .jitter(false)
}

flaky_node!(third_time_lucky, THIRD_TIME_LUCKY);

#[tokio::test(start_paused = true)]
async fn fails_twice_then_succeeds_on_the_third_attempt() {
    let graph = graph_with(third_time_lucky, policy().max_attempts(3));
    let started = Instant::now();
    let out = graph
        .invoke(Flaky::update().failures(2), &RunConfig::new())
        .await
        .unwrap();
    let took = started.elapsed();

    assert_eq!(out.values.succeeded_on, 3);
    assert_eq!(out.values.trace, ["third_time_lucky@0"]);
    assert_eq!(out.steps, 1);
    let attempts: Vec<u32> = THIRD_TIME_LUCKY
        .lock()
        .unwrap()
        .iter()
        .map(|a| a.0)
        .collect();
    assert_eq!(attempts, [1, 2, 3]);
    // Three 10 ms calls plus the waits 100 ms and 200 ms.
    assert_eq!(took, Duration::from_millis(3 * 10 + 100 + 200));
}

flaky_node!(gives_up, GIVES_UP);

#[tokio::test(start_paused = true)]
async fn max_attempts_two_fails_with_the_nodes_error() {
    let graph = graph_with(gives_up, policy().max_attempts(2));
    let started = Instant::now();
    let err = graph
        .invoke(Flaky::update().failures(2), &RunConfig::new())
        .await
        .unwrap_err();
    let took = started.elapsed();

    assert!(
        matches!(&err, RunError::Node { node, step: 0, .. } if node == "gives_up"),
        "{err:?}"
    );
    // The error of the last attempt, unwrapped.
    assert_eq!(
        err.node_error().unwrap().downcast_ref::<Outage>(),
        Some(&Outage::Transient(2))
    );
    let attempts: Vec<u32> = GIVES_UP.lock().unwrap().iter().map(|a| a.0).collect();
    assert_eq!(attempts, [1, 2]);
    assert_eq!(took, Duration::from_millis(2 * 10 + 100));
}

flaky_node!(no_policy, NO_POLICY);

#[tokio::test(start_paused = true)]
async fn without_a_policy_a_node_runs_once() {
    let graph = StateGraph::<Flaky>::new()
        .add_node(no_policy)
        .add_edge(START, no_policy)
        .compile()
        .unwrap();
    let started = Instant::now();
    let err = graph
        .invoke(Flaky::update().failures(1), &RunConfig::new())
        .await
        .unwrap_err();
    assert_eq!(started.elapsed(), Duration::from_millis(10));
    assert_eq!(
        err.node_error().unwrap().downcast_ref::<Outage>(),
        Some(&Outage::Transient(1))
    );
    let attempts: Vec<u32> = NO_POLICY.lock().unwrap().iter().map(|a| a.0).collect();
    assert_eq!(attempts, [1]);
}

static PICKY_ATTEMPTS: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// Fails transiently on attempt 1, then permanently.
#[node]
fn picky(_s: &Flaky, ctx: &NodeContext) -> Result<FlakyUpdate, Outage> {
    PICKY_ATTEMPTS.lock().unwrap().push(ctx.attempt());
    Err(match ctx.attempt() {
        1 => Outage::Transient(1),
        _ => Outage::Permanent,
    })
}

#[tokio::test(start_paused = true)]
async fn retry_on_decides_which_errors_are_retried() {
    let only_transient =
        |e: &NodeError| matches!(e.downcast_ref::<Outage>(), Some(Outage::Transient(_)));
    let graph = graph_with(picky, policy().max_attempts(5).retry_on(only_transient));
    let started = Instant::now();
    let err = graph
        .invoke(Flaky::update(), &RunConfig::new())
        .await
        .unwrap_err();
    // Attempt 1 (transient) was retried after 100 ms; attempt 2 (permanent) was not.
    assert_eq!(started.elapsed(), Duration::from_millis(100));
    assert_eq!(*PICKY_ATTEMPTS.lock().unwrap(), [1, 2]);
    assert_eq!(
        err.node_error().unwrap().downcast_ref::<Outage>(),
        Some(&Outage::Permanent)
    );
}

#[tokio::test(start_paused = true)]
async fn a_predicate_rejecting_the_error_means_no_retry() {
    let attempts = Arc::new(AtomicU32::new(0));
    let mut g = StateGraph::<Flaky>::new();
    let counted = attempts.clone();
    let node = g.add_node_fn("never_retried", move |_: &Flaky| {
        counted.fetch_add(1, Ordering::SeqCst);
        Err::<FlakyUpdate, _>(Outage::Permanent)
    });
    g.add_edge(START, &node).retry(
        &node,
        policy()
            .max_attempts(10)
            .retry_on(|e| e.downcast_ref::<Outage>() != Some(&Outage::Permanent)),
    );
    let graph = g.compile().unwrap();

    let started = Instant::now();
    let err = graph
        .invoke(Flaky::update(), &RunConfig::new())
        .await
        .unwrap_err();
    assert_eq!(started.elapsed(), Duration::ZERO);
    assert_eq!(attempts.load(Ordering::SeqCst), 1);
    assert!(
        matches!(&err, RunError::Node { node, .. } if node == "never_retried"),
        "{err:?}"
    );
}

flaky_node!(capped, CAPPED);

#[tokio::test(start_paused = true)]
async fn waits_grow_exponentially_and_are_capped_by_max_interval() {
    let graph = graph_with(
        capped,
        RetryPolicy::new()
            .max_attempts(5)
            .initial_interval(Duration::from_secs(1))
            .backoff_factor(3.0)
            .max_interval(Duration::from_secs(5))
            .jitter(false),
    );
    let started = Instant::now();
    let out = graph
        .invoke(Flaky::update().failures(4), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.values.succeeded_on, 5);
    // Waits: 1 s, 3 s, then 9 s and 27 s capped to 5 s each.
    let log = CAPPED.lock().unwrap().clone();
    let starts: Vec<Instant> = log.iter().map(|&(_, at)| at).collect();
    let gaps: Vec<Duration> = starts.windows(2).map(|w| w[1] - w[0]).collect();
    let call = Duration::from_millis(10);
    assert_eq!(
        gaps,
        [
            call + Duration::from_secs(1),
            call + Duration::from_secs(3),
            call + Duration::from_secs(5),
            call + Duration::from_secs(5),
        ]
    );
    assert_eq!(
        started.elapsed(),
        5 * call + Duration::from_secs(1 + 3 + 5 + 5)
    );
}

#[tokio::test]
async fn default_policy_is_three_attempts_half_a_second_doubling() {
    let p = RetryPolicy::new();
    assert_eq!(p.delay_after(1), Duration::from_millis(500));
    assert_eq!(p.delay_after(2), Duration::from_secs(1));
    assert_eq!(p.delay_after(8), Duration::from_secs(64));
    assert_eq!(p.delay_after(9), Duration::from_secs(128));
    assert_eq!(p.delay_after(30), Duration::from_secs(128));
}

static SIBLING_RUNS: AtomicU32 = AtomicU32::new(0);

#[node]
fn steady(_s: &Flaky, ctx: &NodeContext) -> FlakyUpdate {
    SIBLING_RUNS.fetch_add(1, Ordering::SeqCst);
    Flaky::update().trace([format!("{}@{}", ctx.node(), ctx.step())])
}

flaky_node!(retried, RETRIED);

#[tokio::test(start_paused = true)]
async fn a_retrying_node_does_not_rerun_its_siblings() {
    let graph = StateGraph::<Flaky>::new()
        .add_node(steady)
        .add_node(retried)
        .add_edge(START, steady)
        .add_edge(START, retried)
        .retry(retried, policy().max_attempts(3))
        .compile()
        .unwrap();
    let out = graph
        .invoke(Flaky::update().failures(2), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(SIBLING_RUNS.load(Ordering::SeqCst), 1);
    assert_eq!(out.values.trace, ["retried@0", "steady@0"]);
    assert_eq!(out.values.succeeded_on, 3);
    assert_eq!(out.steps, 1);
}

flaky_node!(jittered, JITTERED);

/// Jitter is on by default (LangGraph's default too): each wait is the backoff plus
/// up to half of it. With a seed the waits are exactly `wait_after`'s.
#[tokio::test(start_paused = true)]
async fn waits_carry_jitter_and_a_seed_makes_them_reproducible() {
    let policy = RetryPolicy::new()
        .max_attempts(4)
        .initial_interval(Duration::from_secs(1))
        .backoff_factor(2.0)
        .jitter_seed(42);
    let graph = graph_with(jittered, policy.clone());
    let out = graph
        .invoke(Flaky::update().failures(3), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.values.succeeded_on, 4);
    let log = JITTERED.lock().unwrap().clone();
    let gaps: Vec<Duration> = log.windows(2).map(|w| w[1].1 - w[0].1).collect();
    let call = Duration::from_millis(10);
    // The timer rounds each wait up to a whole millisecond.
    for (a, gap) in (1..4).zip(&gaps) {
        let expected = call + policy.wait_after(a);
        assert!(
            *gap >= expected && *gap - expected < Duration::from_millis(1),
            "{a}: {gap:?} vs {expected:?}"
        );
    }
    for (a, gap) in (1..4).zip(&gaps) {
        let backoff = policy.delay_after(a);
        assert!(
            *gap > call + backoff && *gap < call + backoff.mul_f64(1.5),
            "{a}: {gap:?}"
        );
    }
}
