//! Deferred nodes (`StateGraph::defer`, LangGraph's `defer=True`): a deferred node
//! waits while any other task is due and then runs once, the fan-in of branches of
//! different lengths. LangGraph's example (`a → b → b_2 → d`, `a → c → d`, `d`
//! deferred) gives A, B, C, B_2, D on every saver; without `defer`, `d` runs twice.
//! Edge, route and `goto` triggers that pile up give one run; each `Send` to a
//! deferred node runs, all in one step; deferred nodes pending together run
//! together. A waiting trigger survives an interrupt, a failed step or a dropped
//! run and a new compiled graph: the deferred node runs exactly once after resuming.
//!
//! The PostgreSQL case needs a server: set `STATEGRAPH_POSTGRES_URL` (see
//! `stategraph_tests::servers`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use serde_json::json;
use stategraph::checkpoint::{CheckpointSaver, InMemorySaver};
use stategraph::prelude::*;
use stategraph::{BuildProblem, RunInput, StateSnapshot};
use stategraph_postgres::{PostgresOptions, PostgresSaver};
use stategraph_sqlite::SqliteSaver;
use stategraph_tests::servers;

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Trail {
    /// Each node appends its name in capitals (what LangGraph's example prints).
    #[reducer(append)]
    seen: Vec<String>,
    /// `name@step`, in apply order.
    #[reducer(append)]
    at: Vec<String>,
    /// Payloads of `Send` tasks, in apply order.
    #[reducer(append)]
    items: Vec<u64>,
}

fn visit(ctx: &NodeContext) -> TrailUpdate {
    Trail::update()
        .seen([ctx.node().to_uppercase()])
        .at([format!("{}@{}", ctx.node(), ctx.step())])
}

/// Calls of the nodes that are not plain, by `thread/node` (a paused call counts).
static CALLS: Mutex<BTreeMap<String, usize>> = Mutex::new(BTreeMap::new());
/// Threads whose `b_2` fails on its next call, as a crash mid-step would stop it.
static FAIL_ONCE: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
/// Threads whose `b_2` never finishes its next call (the run is then dropped).
static HANG_ONCE: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

fn call(ctx: &NodeContext) {
    let key = format!("{}/{}", ctx.thread_id().unwrap_or("-"), ctx.node());
    *CALLS.lock().unwrap().entry(key).or_default() += 1;
}

fn calls(thread: &str, node: &str) -> usize {
    let calls = CALLS.lock().unwrap();
    calls.get(&format!("{thread}/{node}")).copied().unwrap_or(0)
}

#[node]
fn a(_: &Trail, ctx: &NodeContext) -> TrailUpdate {
    visit(ctx)
}

#[node]
fn b(_: &Trail, ctx: &NodeContext) -> TrailUpdate {
    visit(ctx)
}

/// The long branch's last node: on threads named `ask..` it asks before it writes;
/// on threads in `FAIL_ONCE` it fails once, in `HANG_ONCE` it never returns once.
#[node]
async fn b_2(_: &Trail, ctx: &NodeContext) -> Result<TrailUpdate, NodeError> {
    call(ctx);
    if let Some(thread) = ctx.thread_id() {
        if FAIL_ONCE.lock().unwrap().remove(thread) {
            return Err(NodeError::msg("b_2 stopped mid-step"));
        }
        if HANG_ONCE.lock().unwrap().remove(thread) {
            std::future::pending::<()>().await;
        }
        if thread.starts_with("ask") {
            let _: String = ctx.interrupt(json!("go on?"))?;
        }
    }
    Ok(visit(ctx))
}

#[node]
fn c(_: &Trail, ctx: &NodeContext) -> TrailUpdate {
    visit(ctx)
}

#[node]
fn d(_: &Trail, ctx: &NodeContext) -> TrailUpdate {
    call(ctx);
    visit(ctx)
}

/// LangGraph's example: `a → b, a → c, b → b_2, b_2 → d, c → d, d → END`.
fn example(defer: bool) -> StateGraph<Trail> {
    let mut g = StateGraph::<Trail>::new();
    g.add_node(a)
        .add_node(b)
        .add_node(b_2)
        .add_node(c)
        .add_node(d)
        .add_edge(START, a)
        .add_edge(a, b)
        .add_edge(a, c)
        .add_edge(b, b_2)
        .add_edge(b_2, d)
        .add_edge(c, d)
        .add_edge(d, END);
    if defer {
        g.defer(d);
    }
    g
}

const EXAMPLE: [&str; 5] = ["A", "B", "C", "B_2", "D"];

fn with(saver: Arc<dyn CheckpointSaver>) -> CompileOptions {
    CompileOptions::new().shared_checkpointer(saver)
}

fn sqlite(path: &Path) -> Arc<dyn CheckpointSaver> {
    Arc::new(SqliteSaver::open(path).unwrap())
}

async fn postgres(url: &str, schema: &str) -> Arc<dyn CheckpointSaver> {
    Arc::new(
        PostgresSaver::connect_with(url, PostgresOptions::new().schema(schema))
            .await
            .unwrap(),
    )
}

/// Runs the example on `thread` and checks LangGraph's order and one call of `d`.
async fn example_runs_d_once(options: CompileOptions, thread: &str) {
    let graph = example(true).compile_with(options).unwrap();
    let cfg = RunConfig::new().thread(thread);
    let out = graph.invoke(Trail::update(), &cfg).await.unwrap();
    assert_eq!(out.values.seen, EXAMPLE, "{thread}");
    assert_eq!(out.values.at.last().map(String::as_str), Some("d@3"));
    assert_eq!(out.steps, 4);
    assert_eq!(calls(thread, "d"), 1, "{thread}");
}

#[tokio::test]
async fn the_example_runs_d_once_after_the_long_branch_without_a_saver() {
    let out = example(true)
        .compile()
        .unwrap()
        .invoke(Trail::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.values.seen, EXAMPLE);
    assert_eq!(out.values.at, ["a@0", "b@1", "c@1", "b_2@2", "d@3"]);
}

#[tokio::test]
async fn without_defer_d_runs_once_per_branch() {
    let out = example(false)
        .compile()
        .unwrap()
        .invoke(Trail::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.values.seen, ["A", "B", "C", "B_2", "D", "D"]);
    assert_eq!(out.values.at, ["a@0", "b@1", "c@1", "b_2@2", "d@2", "d@3"]);
}

#[tokio::test]
async fn the_example_on_the_in_memory_saver() {
    example_runs_d_once(with(Arc::new(InMemorySaver::new())), "example-memory").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let saver = sqlite(&dir.path().join("deferred.db"));
    example_runs_d_once(with(saver), "example-sqlite").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_on_postgres() {
    let Some(url) = servers::postgres_url(module_path!()) else {
        return;
    };
    let schema = servers::fresh_schema("deferred");
    example_runs_d_once(with(postgres(&url, &schema).await), "example-postgres").await;
    // Paused in the long branch, resumed by a new worker on the same database.
    let new_worker = || async { with(postgres(&url, &schema).await) };
    pause_in_the_long_branch_and_resume(new_worker, "ask-postgres", Durability::Sync).await;
    tokio::task::spawn_blocking(move || servers::drop_schema(&url, &schema))
        .await
        .unwrap();
}

/// The thread pauses in `b_2` (its interrupt, or a breakpoint before it) while `d`
/// waits; a graph compiled anew on `options()` resumes it: `d` runs exactly once,
/// and the state is the uninterrupted run's.
async fn pause_in_the_long_branch_and_resume<F, Fut>(
    options: F,
    thread: &str,
    durability: Durability,
) where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = CompileOptions>,
{
    let breakpoint = thread.starts_with("before");
    let compile = |o: CompileOptions| {
        let o = if breakpoint {
            o.interrupt_before([b_2])
        } else {
            o
        };
        example(true).compile_with(o).unwrap()
    };
    let cfg = RunConfig::new().thread(thread).durability(durability);
    let paused = compile(options().await)
        .invoke(Trail::update(), &cfg)
        .await
        .unwrap();
    assert_eq!(paused.interrupts.len(), 1, "{thread}");
    assert_eq!(paused.interrupts[0].node, "b_2");
    assert_eq!(paused.values.seen, ["A", "B", "C"], "{thread}");

    let graph = compile(options().await);
    let state: StateSnapshot<Trail> = graph.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(
        state.next,
        ["b_2"],
        "{thread}: d waits, it does not run next"
    );
    assert_eq!(state.deferred, ["d"], "{thread}");
    assert_eq!(state.tasks.len(), 1);
    let resume = if breakpoint {
        RunInput::Continue
    } else {
        Command::resume("yes").into()
    };
    let done = graph.invoke(resume, &cfg).await.unwrap();
    assert!(done.interrupts.is_empty());
    assert_eq!(done.values.seen, EXAMPLE, "{thread}");
    assert_eq!(done.values.at, ["a@0", "b@1", "c@1", "b_2@2", "d@3"]);
    assert_eq!(calls(thread, "d"), 1, "{thread}: d ran exactly once");
    let expected_b_2 = if breakpoint { 1 } else { 2 };
    assert_eq!(calls(thread, "b_2"), expected_b_2, "{thread}");
    let state = graph.get_state(&cfg).await.unwrap().unwrap();
    assert!(state.next.is_empty() && state.deferred.is_empty() && state.tasks.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_in_the_long_branch_keeps_the_deferred_run_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("paused.db");
    for durability in [Durability::Sync, Durability::Async, Durability::Exit] {
        let thread = format!("ask-sqlite-{durability:?}");
        let options = || async { with(sqlite(&path)) };
        pause_in_the_long_branch_and_resume(options, &thread, durability).await;
    }
    let options = || async { with(sqlite(&path)) };
    pause_in_the_long_branch_and_resume(options, "before-sqlite", Durability::Sync).await;
}

#[tokio::test]
async fn an_interrupt_in_the_long_branch_keeps_the_deferred_run_in_memory() {
    let saver: Arc<dyn CheckpointSaver> = Arc::new(InMemorySaver::new());
    let options = || async { with(saver.clone()) };
    pause_in_the_long_branch_and_resume(options, "ask-memory", Durability::Sync).await;
    pause_in_the_long_branch_and_resume(options, "before-memory", Durability::Sync).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_that_fails_in_the_long_branch_keeps_the_deferred_run_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("failed.db");
    let thread = "fail-sqlite";
    FAIL_ONCE.lock().unwrap().insert(thread.to_string());
    let cfg = RunConfig::new().thread(thread);
    let err = example(true)
        .compile_with(with(sqlite(&path)))
        .unwrap()
        .invoke(Trail::update(), &cfg)
        .await
        .unwrap_err();
    assert!(matches!(err, RunError::Node { .. }), "{err:?}");
    let graph = example(true).compile_with(with(sqlite(&path))).unwrap();
    let state = graph.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(
        (state.next, state.deferred),
        (vec!["b_2".into()], vec!["d".into()])
    );
    let done = graph.invoke(None, &cfg).await.unwrap();
    assert_eq!(done.values.seen, EXAMPLE);
    assert_eq!(calls(thread, "d"), 1);
}

/// The run is dropped while `b_2` runs, as a killed process stops: nothing of step 2
/// is saved. The last checkpoint keeps `d` planned; a new graph finishes the thread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_dropped_in_the_long_branch_keeps_the_deferred_run_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dropped.db");
    let thread = "dropped-sqlite";
    HANG_ONCE.lock().unwrap().insert(thread.to_string());
    let cfg = RunConfig::new().thread(thread);
    let graph = example(true).compile_with(with(sqlite(&path))).unwrap();
    let run = {
        let cfg = cfg.clone();
        tokio::spawn(async move { graph.invoke(Trail::update(), &cfg).await })
    };
    while calls(thread, "b_2") == 0 {
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    run.abort();
    assert!(run.await.unwrap_err().is_cancelled());

    let saver = sqlite(&path);
    let stored = saver
        .get_tuple(&stategraph::checkpoint::CheckpointConfig::thread(thread))
        .await
        .unwrap()
        .unwrap();
    let planned: Vec<&str> = stored
        .checkpoint
        .next
        .iter()
        .map(|t| t.node.as_str())
        .collect();
    assert_eq!(
        planned,
        ["b_2", "d"],
        "the waiting trigger is in the checkpoint"
    );
    let done = example(true)
        .compile_with(with(saver))
        .unwrap()
        .invoke(None, &cfg)
        .await
        .unwrap();
    assert_eq!(done.values.seen, EXAMPLE);
    assert_eq!(calls(thread, "d"), 1);
    assert_eq!(calls(thread, "b_2"), 2);
}

#[tokio::test]
async fn a_breakpoint_before_a_deferred_node_stops_when_it_is_due() {
    let saver: Arc<dyn CheckpointSaver> = Arc::new(InMemorySaver::new());
    let graph = example(true)
        .compile_with(with(saver).interrupt_before([d]))
        .unwrap();
    let cfg = RunConfig::new().thread("before-d");
    let paused = graph.invoke(Trail::update(), &cfg).await.unwrap();
    assert_eq!(paused.interrupts[0].node, "d");
    assert_eq!(
        paused.values.seen,
        ["A", "B", "C", "B_2"],
        "not while it waited"
    );
    let state = graph.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(state.next, ["d"]);
    assert!(state.deferred.is_empty());
    let done = graph.invoke(None, &cfg).await.unwrap();
    assert_eq!(done.values.seen, EXAMPLE);
}

#[tokio::test]
async fn stored_checkpoints_show_a_waiting_deferred_node_apart() {
    let saver: Arc<dyn CheckpointSaver> = Arc::new(InMemorySaver::new());
    let graph = example(true).compile_with(with(saver)).unwrap();
    let cfg = RunConfig::new().thread("history");
    let evs: Vec<StreamEvent<Trail>> = graph
        .stream(Trail::update(), &cfg, StreamMode::CHECKPOINTS)
        .map(Result::unwrap)
        .collect()
        .await;
    let event_next: Vec<Vec<String>> = evs
        .iter()
        .map(|e| match e {
            StreamEvent::Checkpoint { next, .. } => next.clone(),
            other => panic!("expected a checkpoint event, got {:?}", other.mode()),
        })
        .collect();
    let history = graph
        .get_state_history(&cfg, &stategraph::checkpoint::ListOptions::new())
        .await
        .unwrap();
    let shown: Vec<(Vec<String>, Vec<String>)> = history
        .iter()
        .rev()
        .map(|s| (s.next.clone(), s.deferred.clone()))
        .collect();
    let v = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
    let expected = [
        (v(&["a"]), v(&[])),
        (v(&["b", "c"]), v(&[])),
        (v(&["b_2"]), v(&["d"])),
        (v(&["d"]), v(&[])),
        (v(&[]), v(&[])),
    ];
    assert_eq!(shown, expected);
    let expected_next: Vec<Vec<String>> = expected.iter().map(|(n, _)| n.clone()).collect();
    assert_eq!(
        event_next, expected_next,
        "checkpoint events show what runs next"
    );
}

/// Branches of 1, 2 and 3 steps from `START` into one deferred node `join`.
#[tokio::test]
async fn branches_of_one_two_and_three_steps_meet_in_one_run() {
    let mut g = StateGraph::<Trail>::new();
    let names = ["x1", "y1", "y2", "z1", "z2", "z3", "join"];
    let [x1, y1, y2, z1, z2, z3, join] =
        names.map(|n| g.add_node_fn_ctx(n, |_: &Trail, ctx: &NodeContext| visit(ctx)));
    g.add_edge(START, &x1)
        .add_edge(START, &y1)
        .add_edge(START, &z1)
        .add_edge(&x1, &join)
        .add_edge(&y1, &y2)
        .add_edge(&y2, &join)
        .add_edge(&z1, &z2)
        .add_edge(&z2, &z3)
        .add_edge(&z3, &join)
        .defer(&join);
    let out = g
        .compile()
        .unwrap()
        .invoke(Trail::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(
        out.values.at,
        ["x1@0", "y1@0", "z1@0", "y2@1", "z2@1", "z3@2", "join@3"]
    );
    assert_eq!(out.steps, 4);
}

/// `quick` routes to `late`; `long1` also sends it there with a `goto`; the long branch
/// is three steps: `late` runs once, after it, with both triggers recorded.
#[tokio::test]
async fn route_and_goto_triggers_that_pile_up_give_one_run() {
    let mut g = StateGraph::<Trail>::new();
    let late = g.add_node_fn_ctx("late", |_: &Trail, ctx: &NodeContext| visit(ctx));
    let quick = g.add_node_fn_ctx("quick", |_: &Trail, ctx: &NodeContext| visit(ctx));
    let goto_late = late.clone();
    let long1 = g.add_node_fn_ctx("long1", move |_: &Trail, ctx: &NodeContext| {
        Command::goto(&goto_late).update(visit(ctx))
    });
    let long2 = g.add_node_fn_ctx("long2", |_: &Trail, ctx: &NodeContext| visit(ctx));
    let long3 = g.add_node_fn_ctx("long3", |_: &Trail, ctx: &NodeContext| visit(ctx));
    let routed = late.clone();
    g.add_edge(START, &quick)
        .add_edge(START, &long1)
        .add_edge(&long1, &long2)
        .add_edge(&long2, &long3)
        .add_conditional_edges(&quick, move |_: &Trail| Route::to(&routed), (&late, END))
        .defer(&late);
    let graph = g.compile().unwrap();
    let evs: Vec<StreamEvent<Trail>> = graph
        .stream(
            Trail::update(),
            &RunConfig::new(),
            StreamMode::TASKS | StreamMode::VALUES,
        )
        .map(Result::unwrap)
        .collect()
        .await;
    let starts: Vec<(i64, String, Vec<String>)> = evs
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TaskStart {
                step,
                node,
                triggers,
                ..
            } if node == "late" => Some((*step, node.clone(), triggers.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        starts,
        [(
            3,
            "late".to_string(),
            vec!["goto:long1".to_string(), "branch:quick".to_string()]
        )]
    );
    let Some(StreamEvent::Values { values, .. }) = evs.last() else {
        panic!("the run ends with its values");
    };
    assert_eq!(
        values.at,
        ["long1@0", "quick@0", "long2@1", "long3@2", "late@3"]
    );
}

#[node]
fn plan(_: &Trail, ctx: &NodeContext) -> TrailUpdate {
    visit(ctx)
}

/// A worker: odd items take a second step (`polish`).
#[node]
fn work(item: &u64, ctx: &NodeContext) -> Command<Trail> {
    let update = Trail::update().at([format!("work({item})@{}", ctx.step())]);
    if item % 2 == 1 {
        Command::goto(stategraph::Send::new(polish, *item)).update(update)
    } else {
        Command::new().update(update.items([*item]))
    }
}

#[node]
fn polish(item: &u64, ctx: &NodeContext) -> TrailUpdate {
    Trail::update()
        .at([format!("polish({item})@{}", ctx.step())])
        .items([*item])
}

#[node]
fn reduce(s: &Trail, ctx: &NodeContext) -> TrailUpdate {
    let mut items = s.items.clone();
    items.sort_unstable();
    Trail::update().at([format!("reduce{items:?}@{}", ctx.step())])
}

fn map_reduce(defer: bool) -> CompiledGraph<Trail> {
    let mut g = StateGraph::<Trail>::new();
    g.add_node(plan)
        .add_node(work)
        .add_node(polish)
        .add_node(reduce)
        .add_edge(START, plan)
        .add_conditional_edges(
            plan,
            |_: &Trail| Route::sends((1..=4u64).map(|i| stategraph::Send::new(work, i))),
            [work],
        )
        .add_edge(work, reduce)
        .add_edge(polish, reduce);
    if defer {
        g.defer(reduce);
    }
    g.compile().unwrap()
}

#[tokio::test]
async fn a_deferred_reducer_waits_for_sends_of_different_lengths() {
    let out = map_reduce(true)
        .invoke(Trail::update(), &RunConfig::new())
        .await
        .unwrap();
    let reduces: Vec<&String> = out
        .values
        .at
        .iter()
        .filter(|s| s.starts_with("reduce"))
        .collect();
    assert_eq!(reduces, ["reduce[1, 2, 3, 4]@3"]);
    // Without `defer`, the reducer runs after each length of worker.
    let out = map_reduce(false)
        .invoke(Trail::update(), &RunConfig::new())
        .await
        .unwrap();
    let reduces: Vec<&String> = out
        .values
        .at
        .iter()
        .filter(|s| s.starts_with("reduce"))
        .collect();
    assert_eq!(reduces, ["reduce[2, 4]@2", "reduce[1, 2, 3, 4]@3"]);
}

#[node]
fn tally(item: &u64, ctx: &NodeContext) -> TrailUpdate {
    Trail::update()
        .at([format!("tally({item})@{}", ctx.step())])
        .items([*item])
}

/// `Send`s to a deferred node from two steps each run once, all in the step after
/// the long branch, in emission order.
#[tokio::test]
async fn sends_to_a_deferred_node_each_run_together_once_it_is_due() {
    let mut g = StateGraph::<Trail>::new();
    g.add_node(plan).add_node(tally);
    let long1 = g.add_node_fn_ctx("long1", |_: &Trail, ctx: &NodeContext| {
        Command::goto(stategraph::Send::new(tally, 10u64)).update(visit(ctx))
    });
    let long2 = g.add_node_fn_ctx("long2", |_: &Trail, ctx: &NodeContext| visit(ctx));
    g.add_edge(START, plan)
        .add_edge(plan, &long1)
        .add_edge(&long1, &long2)
        .add_conditional_edges(
            plan,
            |_: &Trail| Route::sends([3u64, 1, 2].map(|i| stategraph::Send::new(tally, i))),
            [tally],
        )
        .defer(tally);
    let out = g
        .compile()
        .unwrap()
        .invoke(Trail::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(
        out.values.at,
        [
            "plan@0",
            "long1@1",
            "long2@2",
            "tally(3)@3",
            "tally(1)@3",
            "tally(2)@3",
            "tally(10)@3"
        ]
    );
    assert_eq!(out.values.items, [3, 1, 2, 10]);
}

/// `first` is reached after one step, `second` after three: both deferred, they
/// run together in the step after the long branch.
#[tokio::test]
async fn deferred_nodes_pending_together_run_together() {
    let mut g = StateGraph::<Trail>::new();
    let names = ["short", "long1", "long2", "first", "second"];
    let [short, long1, long2, first, second] =
        names.map(|n| g.add_node_fn_ctx(n, |_: &Trail, ctx: &NodeContext| visit(ctx)));
    g.add_edge(START, &short)
        .add_edge(START, &long1)
        .add_edge(&short, &first)
        .add_edge(&long1, &long2)
        .add_edge(&long2, &second)
        .defer([&first, &second]);
    let out = g
        .compile()
        .unwrap()
        .invoke(Trail::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(
        out.values.at,
        ["long1@0", "short@0", "long2@1", "first@2", "second@2"]
    );
}

#[tokio::test]
async fn a_deferred_node_with_nothing_else_due_runs_at_once() {
    let mut g = StateGraph::<Trail>::new();
    let only = g.add_node_fn_ctx("only", |_: &Trail, ctx: &NodeContext| visit(ctx));
    let after = g.add_node_fn_ctx("after", |_: &Trail, ctx: &NodeContext| visit(ctx));
    g.add_edge(START, &only)
        .add_edge(&only, &after)
        .defer(&only);
    let out = g
        .compile()
        .unwrap()
        .invoke(Trail::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.values.at, ["only@0", "after@1"]);
    assert_eq!(out.steps, 2);
}

#[tokio::test]
async fn the_recursion_limit_counts_the_steps_a_deferred_node_waits() {
    let graph = example(true).compile().unwrap();
    let err = graph
        .invoke(Trail::update(), &RunConfig::new().recursion_limit(3))
        .await
        .unwrap_err();
    assert!(
        matches!(err, RunError::RecursionLimit { limit: 3 }),
        "{err:?}"
    );
    let out = graph
        .invoke(Trail::update(), &RunConfig::new().recursion_limit(4))
        .await
        .unwrap();
    assert_eq!(out.values.seen, EXAMPLE);
}

#[test]
fn defer_names_nodes_of_the_graph() {
    let mut g = example(false);
    let err = g.defer(START).compile().unwrap_err();
    assert_eq!(
        err.problems,
        [BuildProblem::UnknownDeferredNode {
            name: "START".into()
        }]
    );
    assert!(err.to_string().contains("`defer` names `START`"), "{err}");
}

#[test]
fn mermaid_marks_deferred_nodes_and_the_version_tells_them_apart() {
    let plain = example(false).compile().unwrap();
    let deferred = example(true).compile().unwrap();
    assert!(!plain.draw_mermaid().contains("deferred"));
    let chart = deferred.draw_mermaid();
    let lines: Vec<&str> = chart.lines().map(str::trim).collect();
    assert!(lines.contains(&"d(d):::deferred"), "{chart}");
    assert!(lines.contains(&"c(c)"), "{chart}");
    assert!(
        lines.contains(&"classDef deferred stroke-dasharray:5 5"),
        "{chart}"
    );
    assert_ne!(plain.graph_version(), deferred.graph_version());
    let twice = example(true).defer(d).compile().unwrap();
    assert_eq!(twice.graph_version(), deferred.graph_version());
}
