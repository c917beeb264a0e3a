//! Pending writes: when a task fails, the writes of its finished siblings are saved on
//! the current checkpoint with the error recorded; `get_state` shows them applied (and
//! a selected checkpoint id shows it as stored); `invoke(None)` re-runs only the tasks
//! without saved writes — for pull tasks and for `Send` tasks, whose payloads come back
//! from the checkpoint — under every durability mode, ending exactly where an
//! uninterrupted run ends.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use stategraph::StateSnapshot;
use stategraph::checkpoint::{CheckpointConfig, CheckpointSaver, InMemorySaver, ListOptions};
use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Work {
    /// `name@step`, in apply order.
    #[reducer(append)]
    trace: Vec<String>,
    #[reducer(add)]
    total: u64,
}

#[derive(Debug)]
struct Boom(String);

impl std::fmt::Display for Boom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "boom in {}", self.0)
    }
}

impl std::error::Error for Boom {}

/// Runs per `thread/what` (tests run in parallel, each on its own threads).
static RUNS: Mutex<BTreeMap<String, usize>> = Mutex::new(BTreeMap::new());

/// Counts a run of `what` on the context's thread; returns how many so far.
fn count_run(ctx: &NodeContext, what: &str) -> usize {
    let key = format!("{}/{what}", ctx.thread_id().unwrap_or("-"));
    let mut runs = RUNS.lock().unwrap();
    let n = runs.entry(key).or_default();
    *n += 1;
    *n
}

fn runs(thread: &str, what: &str) -> usize {
    RUNS.lock()
        .unwrap()
        .get(&format!("{thread}/{what}"))
        .copied()
        .unwrap_or(0)
}

/// Threads named `fail-…` make the flaky task fail on its first call.
fn fails_first_time(ctx: &NodeContext, calls: usize) -> bool {
    calls == 1 && ctx.thread_id().is_some_and(|t| t.starts_with("fail-"))
}

fn visit(ctx: &NodeContext, amount: u64) -> WorkUpdate {
    Work::update()
        .trace([format!("{}@{}", ctx.node(), ctx.step())])
        .total(amount)
}

/// Sync: finishes (and its writes are saved) before the async sibling is polled.
#[node]
fn ok(_s: &Work, ctx: &NodeContext) -> WorkUpdate {
    count_run(ctx, "ok");
    visit(ctx, 1)
}

/// Sorts before `ok`; fails on its first call on a `fail-…` thread.
#[node]
async fn flaky(_s: &Work, ctx: &NodeContext) -> Result<WorkUpdate, Boom> {
    let calls = count_run(ctx, "flaky");
    tokio::time::sleep(Duration::from_millis(5)).await;
    if fails_first_time(ctx, calls) {
        return Err(Boom("flaky".into()));
    }
    Ok(visit(ctx, 10))
}

#[node]
fn done(_s: &Work, ctx: &NodeContext) -> WorkUpdate {
    count_run(ctx, "done");
    visit(ctx, 100)
}

/// `START → {flaky, ok} → done`.
fn parallel(saver: &Arc<InMemorySaver>) -> CompiledGraph<Work> {
    StateGraph::<Work>::new()
        .add_node(ok)
        .add_node(done)
        .add_node(flaky)
        .add_edge(START, ok)
        .add_edge(START, flaky)
        .add_edge(ok, done)
        .add_edge(flaky, done)
        .compile_with(CompileOptions::new().shared_checkpointer(saver.clone()))
        .unwrap()
}

fn shape(history: &[StateSnapshot<Work>]) -> Vec<(i64, String, Work)> {
    history
        .iter()
        .map(|s| {
            (
                s.metadata.step,
                format!("{:?}", s.metadata.source),
                s.values.clone(),
            )
        })
        .collect()
}

async fn parallel_failure_recovers(durability: Durability) {
    let tag = format!("{durability:?}").to_lowercase();
    let failing = format!("fail-par-{tag}");
    let clean = format!("clean-par-{tag}");
    let saver = Arc::new(InMemorySaver::new());
    let graph = parallel(&saver);
    let cfg = RunConfig::new()
        .thread(failing.as_str())
        .durability(durability);

    // The uninterrupted reference run.
    let reference = graph
        .invoke(
            Work::update(),
            &RunConfig::new()
                .thread(clean.as_str())
                .durability(durability),
        )
        .await
        .unwrap();
    assert_eq!(reference.values.trace, ["flaky@0", "ok@0", "done@1"]);
    assert_eq!(reference.values.total, 111);
    let reference_count = saver.checkpoint_count();

    let err = graph.invoke(Work::update(), &cfg).await.unwrap_err();
    assert!(
        matches!(&err, RunError::Node { node, step: 0, .. } if node == "flaky"),
        "{err:?}"
    );
    assert_eq!(err.node_error().unwrap().to_string(), "boom in flaky");
    assert_eq!(runs(&failing, "ok"), 1);
    assert_eq!(runs(&failing, "flaky"), 1);
    assert_eq!(runs(&failing, "done"), 0);
    // One checkpoint holds the failed step's start: the input checkpoint (with `Exit`,
    // the one saved on the error).
    assert_eq!(saver.checkpoint_count(), reference_count + 1);

    // Latest: the finished sibling's write applied, the failed task still next.
    let snap = graph.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(snap.values.trace, ["ok@0"]);
    assert_eq!(snap.values.total, 1);
    assert_eq!(snap.next, ["flaky"]);
    assert_eq!(snap.metadata.step, -1);
    assert_eq!(snap.tasks.len(), 2);
    let (f, o) = (&snap.tasks[0], &snap.tasks[1]);
    assert_eq!(f.node, "flaky");
    assert!(
        f.error
            .as_deref()
            .is_some_and(|e| e.contains("boom in flaky")),
        "{f:?}"
    );
    assert!(!f.has_writes);
    assert_eq!(o.node, "ok");
    assert_eq!(o.error, None);
    assert!(o.has_writes);
    assert_ne!(f.id, o.id);

    // The same checkpoint selected by id: as stored, without the pending write.
    let id = snap.config.checkpoint_id.clone().unwrap();
    let stored = graph
        .get_state(&cfg.clone().checkpoint(id.clone()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.config, snap.config);
    assert_eq!(stored.values, Work::default());
    let history = graph
        .get_state_history(&cfg, &ListOptions::new())
        .await
        .unwrap();
    assert_eq!(history[0].config, snap.config);
    assert_eq!(history[0].values, Work::default());

    // The saver holds exactly: ok's update and flaky's error.
    let tuple = saver
        .get_tuple(&CheckpointConfig::thread(failing.as_str()))
        .await
        .unwrap()
        .unwrap();
    let mut kinds: Vec<(String, String)> = tuple
        .pending_writes
        .iter()
        .map(|w| (w.task_id.clone(), w.channel.clone()))
        .collect();
    kinds.sort();
    assert_eq!(
        kinds,
        [
            (f.id.clone(), "__error__".to_string()),
            (o.id.clone(), "update".to_string()),
        ]
    );

    // Continue: only flaky runs again; ok's saved write is applied in its place.
    let out = graph.invoke(None, &cfg).await.unwrap();
    assert_eq!(runs(&failing, "ok"), 1, "ok must not re-run");
    assert_eq!(runs(&failing, "flaky"), 2);
    assert_eq!(runs(&failing, "done"), 1);
    assert_eq!(out.values, reference.values);
    assert_eq!(out.steps, 2);
    let after = graph.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(after.values, reference.values);
    assert!(after.next.is_empty());
    assert!(after.tasks.is_empty());

    // The recovered thread's history matches the uninterrupted one.
    let recovered = graph
        .get_state_history(&cfg, &ListOptions::new())
        .await
        .unwrap();
    let uninterrupted = graph
        .get_state_history(
            &RunConfig::new().thread(clean.as_str()),
            &ListOptions::new(),
        )
        .await
        .unwrap();
    let mut recovered = shape(&recovered);
    if durability == Durability::Exit {
        // `Exit` also saved a checkpoint when the first run failed: the state the
        // failed step started from (step -1), holding its pending writes. (Its source
        // is checked by `exit_durability_saves_a_failed_first_step_as_an_input_checkpoint`.)
        let (step, _, values) = recovered.pop().unwrap();
        assert_eq!((step, values), (-1, Work::default()));
    }
    assert_eq!(recovered, shape(&uninterrupted));
    assert_eq!(
        saver.checkpoint_count(),
        reference_count + history_len(&graph, &cfg).await,
        "checkpoints of both threads"
    );
}

async fn history_len(graph: &CompiledGraph<Work>, cfg: &RunConfig) -> usize {
    graph
        .get_state_history(cfg, &ListOptions::new())
        .await
        .unwrap()
        .len()
}

#[tokio::test]
async fn exit_durability_saves_a_failed_first_step_as_an_input_checkpoint() {
    // With `Exit`, a run failing in its first superstep saves one checkpoint on the
    // error: the state after the input, step -1. SEMANTICS: the input checkpoint has
    // source `input`, step -1; `loop` checkpoints have steps 0, 1, ...
    let saver = Arc::new(InMemorySaver::new());
    let graph = parallel(&saver);
    let cfg = RunConfig::new()
        .thread("fail-exit-source")
        .durability(Durability::Exit);
    graph.invoke(Work::update(), &cfg).await.unwrap_err();
    assert_eq!(saver.checkpoint_count(), 1);
    let snap = graph.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(snap.metadata.step, -1);
    assert_eq!(
        snap.metadata.source,
        stategraph::checkpoint::CheckpointSource::Input,
        "a step -1 checkpoint is the input checkpoint"
    );
}

#[tokio::test]
async fn a_failed_parallel_task_reruns_alone_sync() {
    parallel_failure_recovers(Durability::Sync).await;
}

#[tokio::test]
async fn a_failed_parallel_task_reruns_alone_async() {
    parallel_failure_recovers(Durability::Async).await;
}

#[tokio::test]
async fn a_failed_parallel_task_reruns_alone_exit() {
    parallel_failure_recovers(Durability::Exit).await;
}

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Fan {
    #[reducer(append)]
    trace: Vec<String>,
    /// What to fan out.
    items: Vec<Item>,
    #[reducer(add)]
    total: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Item {
    id: u32,
    label: String,
}

#[node]
fn plan(_s: &Fan, ctx: &NodeContext) -> FanUpdate {
    count_run(ctx, "plan");
    Fan::update().trace([format!("plan@{}", ctx.step())])
}

/// Item 1 fails on its first call on a `fail-…` thread (after the others finished).
#[node]
async fn worker(item: &Item, ctx: &NodeContext) -> Result<FanUpdate, Boom> {
    let calls = count_run(ctx, &format!("worker{}", item.id));
    if item.id == 1 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        if fails_first_time(ctx, calls) {
            return Err(Boom(format!("worker {}", item.label)));
        }
    }
    Ok(Fan::update()
        .trace([format!("worker({}:{})@{}", item.id, item.label, ctx.step())])
        .total(u64::from(item.id) + 1))
}

#[node]
fn collect(_s: &Fan, ctx: &NodeContext) -> FanUpdate {
    count_run(ctx, "collect");
    Fan::update().trace([format!("collect@{}", ctx.step())])
}

fn fan_out(saver: &Arc<InMemorySaver>) -> CompiledGraph<Fan> {
    StateGraph::<Fan>::new()
        .add_node(plan)
        .add_node(worker)
        .add_node(collect)
        .add_edge(START, plan)
        .add_conditional_edges(
            plan,
            |s: &Fan| {
                Route::sends(
                    s.items
                        .iter()
                        .map(|i| stategraph::Send::new(worker, i.clone()))
                        .collect::<Vec<_>>(),
                )
            },
            [worker],
        )
        .add_edge(worker, collect)
        .compile_with(CompileOptions::new().shared_checkpointer(saver.clone()))
        .unwrap()
}

fn items() -> Vec<Item> {
    ["a", "b", "c"]
        .iter()
        .zip(0..)
        .map(|(l, id)| Item {
            id,
            label: (*l).to_string(),
        })
        .collect()
}

async fn send_failure_recovers(durability: Durability) {
    let tag = format!("{durability:?}").to_lowercase();
    let failing = format!("fail-fan-{tag}");
    let clean = format!("clean-fan-{tag}");
    let saver = Arc::new(InMemorySaver::new());
    let cfg = RunConfig::new()
        .thread(failing.as_str())
        .durability(durability);

    let reference = fan_out(&saver)
        .invoke(
            Fan::update().items(items()),
            &RunConfig::new()
                .thread(clean.as_str())
                .durability(durability),
        )
        .await
        .unwrap();
    let expected_trace = [
        "plan@0",
        "worker(0:a)@1",
        "worker(1:b)@1",
        "worker(2:c)@1",
        "collect@2",
    ];
    assert_eq!(reference.values.trace, expected_trace);
    assert_eq!(reference.values.total, 6);

    {
        let graph = fan_out(&saver);
        let err = graph
            .invoke(Fan::update().items(items()), &cfg)
            .await
            .unwrap_err();
        assert!(
            matches!(&err, RunError::Node { node, step: 1, .. } if node == "worker"),
            "{err:?}"
        );
        assert_eq!(err.node_error().unwrap().to_string(), "boom in worker b");
        let snap = graph.get_state(&cfg).await.unwrap().unwrap();
        assert_eq!(snap.metadata.step, 0);
        assert_eq!(
            snap.values.trace,
            ["plan@0", "worker(0:a)@1", "worker(2:c)@1"]
        );
        assert_eq!(snap.values.total, 1 + 3);
        assert_eq!(snap.next, ["worker"]);
        let tasks: Vec<(&str, bool, bool)> = snap
            .tasks
            .iter()
            .map(|t| (t.node.as_str(), t.error.is_some(), t.has_writes))
            .collect();
        assert_eq!(
            tasks,
            [
                ("worker", false, true),
                ("worker", true, false),
                ("worker", false, true),
            ]
        );
        let stored = graph
            .get_state(
                &cfg.clone()
                    .checkpoint(snap.config.checkpoint_id.clone().unwrap()),
            )
            .await
            .unwrap()
            .unwrap();
        assert_eq!(stored.values.trace, ["plan@0"]);
    }

    // The payloads are in the checkpoint.
    let tuple = saver
        .get_tuple(&CheckpointConfig::thread(failing.as_str()))
        .await
        .unwrap()
        .unwrap();
    let payloads: Vec<serde_json::Value> = tuple
        .checkpoint
        .next
        .iter()
        .map(|t| {
            assert_eq!(t.node, "worker");
            t.payload.clone().expect("a Send task stores its payload")
        })
        .collect();
    assert_eq!(
        payloads,
        items()
            .iter()
            .map(|i| serde_json::to_value(i).unwrap())
            .collect::<Vec<_>>()
    );

    // A freshly compiled graph (nothing in memory) continues from the checkpoint alone.
    let graph = fan_out(&saver);
    let out = graph.invoke(None, &cfg).await.unwrap();
    assert_eq!(out.values.trace, expected_trace);
    assert_eq!(out.values, reference.values);
    assert_eq!(runs(&failing, "plan"), 1);
    assert_eq!(runs(&failing, "worker0"), 1, "worker 0 must not re-run");
    assert_eq!(runs(&failing, "worker1"), 2);
    assert_eq!(runs(&failing, "worker2"), 1, "worker 2 must not re-run");
    assert_eq!(runs(&failing, "collect"), 1);
    assert_eq!(
        graph.get_state(&cfg).await.unwrap().unwrap().values,
        reference.values
    );
}

#[tokio::test]
async fn a_failed_send_task_reruns_alone_with_its_payload_from_the_checkpoint_sync() {
    send_failure_recovers(Durability::Sync).await;
}

#[tokio::test]
async fn a_failed_send_task_reruns_alone_with_its_payload_from_the_checkpoint_exit() {
    send_failure_recovers(Durability::Exit).await;
}

#[tokio::test]
async fn a_failed_send_task_reruns_alone_with_its_payload_from_the_checkpoint_async() {
    send_failure_recovers(Durability::Async).await;
}

#[tokio::test]
async fn a_task_failing_again_shows_its_latest_error_and_its_sibling_still_runs_once() {
    // flaky2 fails on its first two calls: the run and the first continuation fail;
    // the second continuation succeeds. a_ok finished in the first run and never
    // runs again; `get_state` shows flaky2's latest error.
    let saver = Arc::new(InMemorySaver::new());
    let mut g = StateGraph::<Work>::new();
    let calls = Arc::new(Mutex::new(0usize));
    let flaky_calls = calls.clone();
    let flaky2 = g.add_node_fn("flaky2", move |_s: &Work| {
        let mut n = flaky_calls.lock().unwrap();
        *n += 1;
        if *n <= 2 {
            Err(Boom(format!("flaky2 call {n}")))
        } else {
            Ok(Work::update().trace(["flaky2".to_string()]).total(10))
        }
    });
    let ok_calls = Arc::new(Mutex::new(0usize));
    let counted = ok_calls.clone();
    // `a_ok` sorts before `flaky2`, so (both sync) it finishes before flaky2 fails.
    let a_ok = g.add_node_fn("a_ok", move |_s: &Work| {
        *counted.lock().unwrap() += 1;
        Work::update().trace(["a_ok".to_string()]).total(1)
    });
    g.add_edge(START, &a_ok).add_edge(START, &flaky2);
    let graph = g
        .compile_with(CompileOptions::new().shared_checkpointer(saver.clone()))
        .unwrap();
    let cfg = RunConfig::new().thread("twice");

    let err = graph.invoke(Work::update(), &cfg).await.unwrap_err();
    assert!(err.to_string().contains("flaky2 call 1"), "{err}");
    let err = graph.invoke(None, &cfg).await.unwrap_err();
    assert!(err.to_string().contains("flaky2 call 2"), "{err}");
    let snap = graph.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(snap.values.trace, ["a_ok"]);
    assert_eq!(snap.next, ["flaky2"]);
    assert!(
        snap.tasks[1]
            .error
            .as_deref()
            .is_some_and(|e| e.contains("flaky2 call 2")),
        "the latest error is shown: {:?}",
        snap.tasks
    );
    let out = graph.invoke(None, &cfg).await.unwrap();
    assert_eq!(out.values.trace, ["a_ok", "flaky2"]);
    assert_eq!(out.values.total, 11);
    assert_eq!(*ok_calls.lock().unwrap(), 1, "a_ok must run once");
    assert_eq!(*calls.lock().unwrap(), 3);
}

/// Fails on its first call (fast).
#[node]
async fn x_first(_s: &Work, ctx: &NodeContext) -> Result<WorkUpdate, Boom> {
    let calls = count_run(ctx, "x_first");
    tokio::task::yield_now().await;
    if calls == 1 {
        return Err(Boom("x_first".into()));
    }
    Ok(visit(ctx, 10))
}

/// First call: slow (cancelled by x_first's failure). Second call: fails after
/// x_first has finished. Third call: succeeds.
#[node]
async fn y_second(_s: &Work, ctx: &NodeContext) -> Result<WorkUpdate, Boom> {
    let calls = count_run(ctx, "y_second");
    match calls {
        1 => {
            tokio::time::sleep(Duration::from_millis(200)).await;
            Ok(visit(ctx, 100))
        }
        2 => {
            tokio::time::sleep(Duration::from_millis(20)).await;
            Err(Boom("y_second".into()))
        }
        _ => Ok(visit(ctx, 100)),
    }
}

#[tokio::test]
async fn a_task_that_succeeds_on_a_continuation_keeps_its_writes_when_a_sibling_fails() {
    // Step 0 = {ok, x_first, y_second}. Run 1: ok finishes, x_first fails, y_second is
    // cancelled. Continue 1: x_first succeeds, y_second fails. Continue 2 must re-run
    // only y_second: x_first's writes from continue 1 are saved.
    let saver = Arc::new(InMemorySaver::new());
    let graph = StateGraph::<Work>::new()
        .add_node(ok)
        .add_node(x_first)
        .add_node(y_second)
        .add_edge(START, ok)
        .add_edge(START, x_first)
        .add_edge(START, y_second)
        .compile_with(CompileOptions::new().shared_checkpointer(saver.clone()))
        .unwrap();
    let thread = "succeeds-later";
    let cfg = RunConfig::new().thread(thread);

    let err = graph.invoke(Work::update(), &cfg).await.unwrap_err();
    assert!(
        matches!(&err, RunError::Node { node, .. } if node == "x_first"),
        "{err:?}"
    );
    let err = graph.invoke(None, &cfg).await.unwrap_err();
    assert!(
        matches!(&err, RunError::Node { node, .. } if node == "y_second"),
        "{err:?}"
    );
    assert_eq!(runs(thread, "x_first"), 2);

    let snap = graph.get_state(&cfg).await.unwrap().unwrap();
    let tasks: Vec<(&str, Option<&str>, bool)> = snap
        .tasks
        .iter()
        .map(|t| (t.node.as_str(), t.error.as_deref(), t.has_writes))
        .collect();
    assert_eq!(
        tasks,
        [
            ("ok", None, true),
            ("x_first", None, true),
            ("y_second", Some("boom in y_second"), false),
        ],
        "x_first succeeded on the continuation, so its writes are saved"
    );
    assert_eq!(snap.next, ["y_second"]);
    assert_eq!(snap.values.trace, ["ok@0", "x_first@0"]);

    let out = graph.invoke(None, &cfg).await.unwrap();
    assert_eq!(out.values.trace, ["ok@0", "x_first@0", "y_second@0"]);
    assert_eq!(out.values.total, 111);
    assert_eq!(runs(thread, "ok"), 1);
    assert_eq!(
        runs(thread, "x_first"),
        2,
        "x_first must not run a third time"
    );
    assert_eq!(runs(thread, "y_second"), 3);
}

#[node]
fn quiet(_s: &Work, ctx: &NodeContext) -> Option<WorkUpdate> {
    count_run(ctx, "quiet");
    None
}

#[tokio::test]
async fn a_sibling_that_finished_without_writes_is_not_rerun() {
    // `quiet` finishes without writing anything (sync: before flaky is polled), then
    // flaky fails. `quiet` finished: it is not next and does not run again.
    let saver = Arc::new(InMemorySaver::new());
    let graph = StateGraph::<Work>::new()
        .add_node(quiet)
        .add_node(flaky)
        .add_edge(START, quiet)
        .add_edge(START, flaky)
        .compile_with(CompileOptions::new().shared_checkpointer(saver.clone()))
        .unwrap();
    let thread = "fail-quiet";
    let cfg = RunConfig::new().thread(thread);

    let err = graph.invoke(Work::update(), &cfg).await.unwrap_err();
    assert!(
        matches!(&err, RunError::Node { node, .. } if node == "flaky"),
        "{err:?}"
    );
    assert_eq!(runs(thread, "quiet"), 1);
    let snap = graph.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(snap.next, ["flaky"], "only the failed task is next");

    let out = graph.invoke(None, &cfg).await.unwrap();
    assert_eq!(out.values.trace, ["flaky@0"]);
    assert_eq!(runs(thread, "flaky"), 2);
    assert_eq!(
        runs(thread, "quiet"),
        1,
        "quiet finished and must not re-run"
    );
}
