//! Fan-out / fan-in with parallel async nodes that finish in random order: the final
//! state and the per-step task order are the same in every run; `max_concurrency`
//! bounds how many tasks of a step run at once.

use std::collections::HashSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Fan {
    /// `name@step`, in apply order.
    #[reducer(append)]
    trace: Vec<String>,
    #[reducer(append)]
    results: Vec<String>,
    #[reducer(add)]
    sum: u64,
    /// Last value, written once by `merge`.
    summary: String,
}

/// Real-time completion order of the workers (only the 100-run test runs them).
static COMPLETIONS: Mutex<Vec<String>> = Mutex::new(Vec::new());

async fn work(ctx: &NodeContext, weight: u64) -> FanUpdate {
    let micros = rand::random_range(0..=3_000u64);
    tokio::time::sleep(Duration::from_micros(micros)).await;
    COMPLETIONS.lock().unwrap().push(ctx.node().to_string());
    Fan::update()
        .trace([format!("{}@{}", ctx.node(), ctx.step())])
        .results([format!("{} done", ctx.node())])
        .sum(weight)
}

#[node]
fn split(_s: &Fan, ctx: &NodeContext) -> FanUpdate {
    Fan::update().trace([format!("{}@{}", ctx.node(), ctx.step())])
}

#[node]
async fn w_echo(_s: &Fan, ctx: &NodeContext) -> FanUpdate {
    work(ctx, 1).await
}

#[node]
async fn w_alpha(_s: &Fan, ctx: &NodeContext) -> FanUpdate {
    work(ctx, 10).await
}

#[node]
async fn w_delta(_s: &Fan, ctx: &NodeContext) -> FanUpdate {
    work(ctx, 100).await
}

#[node]
async fn w_charlie(_s: &Fan, ctx: &NodeContext) -> FanUpdate {
    work(ctx, 1_000).await
}

#[node]
async fn w_bravo(_s: &Fan, ctx: &NodeContext) -> FanUpdate {
    work(ctx, 10_000).await
}

#[node]
async fn merge(s: &Fan, ctx: &NodeContext) -> FanUpdate {
    let micros = rand::random_range(0..=1_000u64);
    tokio::time::sleep(Duration::from_micros(micros)).await;
    Fan::update()
        .trace([format!("{}@{}", ctx.node(), ctx.step())])
        .summary(format!("{} -> {}", s.results.join(", "), s.sum))
}

fn fan_graph() -> CompiledGraph<Fan> {
    let workers = [w_echo, w_alpha, w_delta, w_charlie, w_bravo];
    let mut g = StateGraph::<Fan>::new();
    // Added in neither name nor fan order.
    g.add_node(merge);
    for w in workers {
        g.add_node(w);
    }
    g.add_node(split);
    g.add_edge(START, split);
    for w in workers {
        g.add_edge(split, w);
    }
    g.add_edge(workers, merge);
    g.add_edge(merge, END);
    g.compile().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn random_sleep_fan_out_is_deterministic_over_100_runs() {
    let graph = fan_graph();
    let expected_trace = [
        "split@0",
        "w_alpha@1",
        "w_bravo@1",
        "w_charlie@1",
        "w_delta@1",
        "w_echo@1",
        "merge@2",
    ];

    let mut first: Option<Fan> = None;
    let mut completion_orders = HashSet::new();
    for run in 0..100 {
        COMPLETIONS.lock().unwrap().clear();
        let out = graph
            .invoke(Fan::update(), &RunConfig::new())
            .await
            .unwrap();
        assert_eq!(out.steps, 3, "run {run}");
        // Per-step task order: pull tasks by node name, whatever finished first.
        assert_eq!(out.values.trace, expected_trace, "run {run}");
        match &first {
            None => first = Some(out.values),
            Some(f) => assert_eq!(&out.values, f, "run {run} differs from run 0"),
        }
        completion_orders.insert(COMPLETIONS.lock().unwrap().clone());
    }

    let first = first.unwrap();
    assert_eq!(first.sum, 11_111);
    assert_eq!(
        first.summary,
        "w_alpha done, w_bravo done, w_charlie done, w_delta done, w_echo done -> 11111"
    );
    // The workers really did finish in varying order, so the test means something.
    assert!(
        completion_orders.len() > 1,
        "the random sleeps never changed the completion order: {completion_orders:?}"
    );

    // Running the workers one at a time changes nothing either.
    let serial = graph
        .invoke(Fan::update(), &RunConfig::new().max_concurrency(1))
        .await
        .unwrap();
    assert_eq!(serial.values, first);
    assert_eq!(serial.steps, 3);
}

static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

#[node]
async fn bounded(item: &u64, ctx: &NodeContext) -> FanUpdate {
    let now = IN_FLIGHT.fetch_add(1, Ordering::SeqCst) + 1;
    PEAK.fetch_max(now, Ordering::SeqCst);
    // Later items sleep less, so they would overtake earlier ones if unbounded.
    tokio::time::sleep(Duration::from_millis(100 - *item)).await;
    IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
    Fan::update()
        .trace([format!("{}({item})@{}", ctx.node(), ctx.step())])
        .sum(*item)
}

#[node]
fn spread(_s: &Fan) -> Option<FanUpdate> {
    None
}

#[tokio::test(start_paused = true)]
async fn max_concurrency_bounds_tasks_running_at_once() {
    let graph = StateGraph::<Fan>::new()
        .add_node(spread)
        .add_node(bounded)
        .add_edge(START, spread)
        .add_conditional_edges(
            spread,
            |_: &Fan| Route::sends((0..12u64).map(|i| stategraph::Send::new(bounded, i))),
            [bounded],
        )
        .compile()
        .unwrap();

    for (limit, peak) in [(Some(3), 3), (Some(1), 1), (None, 12)] {
        PEAK.store(0, Ordering::SeqCst);
        let config = match limit {
            Some(k) => RunConfig::new().max_concurrency(k),
            None => RunConfig::new(),
        };
        let out = graph.invoke(Fan::update(), &config).await.unwrap();
        assert_eq!(PEAK.load(Ordering::SeqCst), peak, "limit {limit:?}");
        assert_eq!(IN_FLIGHT.load(Ordering::SeqCst), 0);
        assert_eq!(out.values.sum, (0..12).sum::<u64>());
        let expected: Vec<String> = (0..12).map(|i| format!("bounded({i})@1")).collect();
        assert_eq!(out.values.trace, expected, "limit {limit:?}");
    }
}
