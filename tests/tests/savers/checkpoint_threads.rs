//! Threads and checkpoints: a checkpointer needs a thread id; a fresh thread writes an
//! `input` checkpoint (step -1) and one `loop` checkpoint per superstep with a correct
//! parent chain; history is newest first with `before` / `limit` / filters; new input
//! on a finished thread continues it; `invoke(None)` on an unknown or finished thread;
//! unknown checkpoint ids; two threads never see each other.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use stategraph::checkpoint::{CheckpointSource, InMemorySaver, ListOptions};
use stategraph::prelude::*;
use stategraph::{ContinueReason, StateSnapshot};

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Flow {
    /// `name@step`, in apply order.
    #[reducer(append)]
    trace: Vec<String>,
    #[reducer(add)]
    total: u64,
    /// Last value, set by the input.
    topic: String,
}

/// Node runs per `thread/node` (tests run in parallel, each on its own threads).
static RUNS: Mutex<BTreeMap<String, usize>> = Mutex::new(BTreeMap::new());

fn count_run(ctx: &NodeContext) {
    let key = format!("{}/{}", ctx.thread_id().unwrap_or("-"), ctx.node());
    *RUNS.lock().unwrap().entry(key).or_default() += 1;
}

fn runs(thread: &str, node: &str) -> usize {
    RUNS.lock()
        .unwrap()
        .get(&format!("{thread}/{node}"))
        .copied()
        .unwrap_or(0)
}

fn visit(ctx: &NodeContext, amount: u64) -> FlowUpdate {
    count_run(ctx);
    Flow::update()
        .trace([format!("{}@{}", ctx.node(), ctx.step())])
        .total(amount)
}

#[node]
fn a(_s: &Flow, ctx: &NodeContext) -> FlowUpdate {
    visit(ctx, 1)
}

#[node]
async fn b(_s: &Flow, ctx: &NodeContext) -> FlowUpdate {
    tokio::task::yield_now().await;
    visit(ctx, 10)
}

#[node]
fn c(_s: &Flow, ctx: &NodeContext) -> FlowUpdate {
    visit(ctx, 100)
}

/// `START → a → b → c`, checkpointed to `saver`.
fn chain(saver: &Arc<InMemorySaver>) -> CompiledGraph<Flow> {
    StateGraph::<Flow>::new()
        .add_node(c)
        .add_node(b)
        .add_node(a)
        .add_edge(START, a)
        .add_edge(a, b)
        .add_edge(b, c)
        .compile_with(CompileOptions::new().shared_checkpointer(saver.clone()))
        .unwrap()
}

fn thread(id: &str) -> RunConfig {
    RunConfig::new().thread(id)
}

fn id_of(s: &StateSnapshot<Flow>) -> String {
    s.config
        .checkpoint_id
        .clone()
        .expect("a snapshot names its checkpoint")
}

fn steps_of(history: &[StateSnapshot<Flow>]) -> Vec<i64> {
    history.iter().map(|s| s.metadata.step).collect()
}

fn sources_of(history: &[StateSnapshot<Flow>]) -> Vec<CheckpointSource> {
    history.iter().map(|s| s.metadata.source).collect()
}

/// Every snapshot's parent is the next (older) one; the oldest has none.
fn assert_parent_chain(history: &[StateSnapshot<Flow>]) {
    for pair in history.windows(2) {
        assert_eq!(
            pair[0].parent_config.as_ref(),
            Some(&pair[1].config),
            "parent of {:?}",
            pair[0].config
        );
        assert_eq!(
            pair[0].metadata.parents.get(""),
            Some(&id_of(&pair[1])),
            "metadata.parents of {:?}",
            pair[0].config
        );
    }
    let oldest = history.last().unwrap();
    assert_eq!(oldest.parent_config, None);
    assert!(oldest.metadata.parents.is_empty());
}

#[tokio::test]
async fn a_checkpointer_requires_a_thread_id() {
    let saver = Arc::new(InMemorySaver::new());
    let graph = chain(&saver);

    let err = graph
        .invoke(Flow::update().topic("x"), &RunConfig::new())
        .await
        .unwrap_err();
    assert!(matches!(err, RunError::MissingThreadId), "{err:?}");
    assert!(err.to_string().contains("thread"), "{err}");

    let err = graph.invoke(None, &RunConfig::new()).await.unwrap_err();
    assert!(matches!(err, RunError::MissingThreadId), "{err:?}");

    let err = graph.get_state(&RunConfig::new()).await.unwrap_err();
    assert!(matches!(err, RunError::MissingThreadId), "{err:?}");
    let err = graph
        .get_state_history(&RunConfig::new(), &ListOptions::new())
        .await
        .unwrap_err();
    assert!(matches!(err, RunError::MissingThreadId), "{err:?}");

    // Nothing ran and nothing was stored.
    assert_eq!(runs("-", "a"), 0);
    assert_eq!(saver.checkpoint_count(), 0);
}

#[tokio::test]
async fn a_fresh_thread_writes_an_input_checkpoint_then_one_loop_checkpoint_per_superstep() {
    let saver = Arc::new(InMemorySaver::new());
    let graph = chain(&saver);
    let cfg = thread("fresh");

    let out = graph
        .invoke(Flow::update().topic("fresh"), &cfg)
        .await
        .unwrap();
    assert_eq!(out.steps, 3);
    assert_eq!(out.values.trace, ["a@0", "b@1", "c@2"]);
    assert_eq!(out.values.total, 111);
    assert_eq!(saver.checkpoint_count(), 4);

    let history = graph
        .get_state_history(&cfg, &ListOptions::new())
        .await
        .unwrap();
    assert_eq!(history.len(), 4);
    assert_eq!(steps_of(&history), [2, 1, 0, -1]);
    assert_eq!(
        sources_of(&history),
        [
            CheckpointSource::Loop,
            CheckpointSource::Loop,
            CheckpointSource::Loop,
            CheckpointSource::Input,
        ]
    );
    let next: Vec<Vec<String>> = history.iter().map(|s| s.next.clone()).collect();
    assert_eq!(next, [vec![], vec!["c"], vec!["b"], vec!["a"]]);
    let traces: Vec<Vec<String>> = history.iter().map(|s| s.values.trace.clone()).collect();
    assert_eq!(
        traces,
        [
            vec!["a@0", "b@1", "c@2"],
            vec!["a@0", "b@1"],
            vec!["a@0"],
            vec![],
        ]
    );
    // The input checkpoint already holds the input.
    assert!(history.iter().all(|s| s.values.topic == "fresh"));
    assert_parent_chain(&history);
    // Ids sort in creation order: newest first means strictly decreasing.
    let ids: Vec<String> = history.iter().map(id_of).collect();
    assert!(ids.windows(2).all(|w| w[0] > w[1]), "{ids:?}");
    for s in &history {
        assert_eq!(s.config.thread_id, "fresh");
        assert!(!s.created_at.is_empty());
    }

    // The run reports its last checkpoint; `get_state` reads the same.
    assert_eq!(out.checkpoint.as_ref(), Some(&history[0].config));
    let latest = graph.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(latest.config, history[0].config);
    assert_eq!(latest.values, out.values);
    assert!(latest.next.is_empty());
    assert!(latest.tasks.is_empty());

    // `before` excludes that id and everything newer; `limit` caps.
    let before = graph
        .get_state_history(&cfg, &ListOptions::new().before(ids[1].clone()))
        .await
        .unwrap();
    assert_eq!(before.iter().map(id_of).collect::<Vec<_>>(), &ids[2..]);
    let limited = graph
        .get_state_history(&cfg, &ListOptions::new().limit(2))
        .await
        .unwrap();
    assert_eq!(limited.iter().map(id_of).collect::<Vec<_>>(), &ids[..2]);
    let both = graph
        .get_state_history(&cfg, &ListOptions::new().before(ids[1].clone()).limit(1))
        .await
        .unwrap();
    assert_eq!(both.iter().map(id_of).collect::<Vec<_>>(), &ids[2..3]);
    let none = graph
        .get_state_history(&cfg, &ListOptions::new().before(ids[3].clone()))
        .await
        .unwrap();
    assert!(none.is_empty());

    // Metadata filters: equality on every given key.
    let loops = graph
        .get_state_history(&cfg, &ListOptions::new().filter("source", "loop"))
        .await
        .unwrap();
    assert_eq!(steps_of(&loops), [2, 1, 0]);
    let step0 = graph
        .get_state_history(
            &cfg,
            &ListOptions::new()
                .filter("source", "loop")
                .filter("step", 0),
        )
        .await
        .unwrap();
    assert_eq!(step0.iter().map(id_of).collect::<Vec<_>>(), &ids[2..3]);
    let input = graph
        .get_state_history(&cfg, &ListOptions::new().filter("source", "input"))
        .await
        .unwrap();
    assert_eq!(input.iter().map(id_of).collect::<Vec<_>>(), &ids[3..]);

    // Each node ran once.
    assert_eq!(
        ["a", "b", "c"].map(|n| runs("fresh", n)),
        [1, 1, 1],
        "node runs"
    );
}

#[tokio::test]
async fn a_new_input_on_a_finished_thread_continues_it() {
    let saver = Arc::new(InMemorySaver::new());
    let graph = chain(&saver);
    let cfg = thread("again");

    let first = graph
        .invoke(Flow::update().topic("one"), &cfg)
        .await
        .unwrap();
    let second = graph
        .invoke(Flow::update().topic("two"), &cfg)
        .await
        .unwrap();

    // Reducers keep accumulating; the last value is replaced; steps carry on.
    assert_eq!(second.steps, 3);
    assert_eq!(
        second.values.trace,
        ["a@0", "b@1", "c@2", "a@4", "b@5", "c@6"]
    );
    assert_eq!(second.values.total, 222);
    assert_eq!(second.values.topic, "two");
    assert_eq!(["a", "b", "c"].map(|n| runs("again", n)), [2, 2, 2]);

    let history = graph
        .get_state_history(&cfg, &ListOptions::new())
        .await
        .unwrap();
    assert_eq!(saver.checkpoint_count(), 8);
    assert_eq!(steps_of(&history), [6, 5, 4, 3, 2, 1, 0, -1]);
    use CheckpointSource::{Input, Loop};
    assert_eq!(
        sources_of(&history),
        [Loop, Loop, Loop, Input, Loop, Loop, Loop, Input]
    );
    assert_parent_chain(&history);
    // The second input checkpoint follows the first run's last checkpoint and already
    // holds the new input on top of the old state.
    assert_eq!(history[3].parent_config, first.checkpoint);
    assert_eq!(history[3].values.topic, "two");
    assert_eq!(history[3].values.trace, first.values.trace);
    assert_eq!(history[3].next, ["a"]);
    assert_eq!(second.checkpoint.as_ref(), Some(&history[0].config));
}

#[tokio::test]
async fn continuing_an_unknown_thread_is_nothing_to_continue() {
    let saver = Arc::new(InMemorySaver::new());
    let graph = chain(&saver);
    let cfg = thread("nobody");

    let err = graph.invoke(None, &cfg).await.unwrap_err();
    match &err {
        RunError::NothingToContinue { reason } => {
            assert!(
                matches!(reason, ContinueReason::NoCheckpoint { thread } if thread == "nobody"),
                "{reason}"
            );
            assert!(err.to_string().contains("nobody"), "{err}");
        }
        other => panic!("expected NothingToContinue, got {other:?}"),
    }
    assert_eq!(saver.checkpoint_count(), 0);
    assert!(graph.get_state(&cfg).await.unwrap().is_none());
    assert!(
        graph
            .get_state_history(&cfg, &ListOptions::new())
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(runs("nobody", "a"), 0);
}

#[tokio::test]
async fn continuing_without_a_checkpointer_is_nothing_to_continue() {
    let graph = StateGraph::<Flow>::new()
        .add_node(a)
        .add_edge(START, a)
        .compile()
        .unwrap();
    let err = graph.invoke(None, &thread("plain")).await.unwrap_err();
    assert!(matches!(err, RunError::NothingToContinue { .. }), "{err:?}");
    assert!(matches!(
        err,
        RunError::NothingToContinue {
            reason: ContinueReason::NoCheckpointer { .. }
        }
    ));
    assert_eq!(runs("plain", "a"), 0);
}

#[tokio::test]
async fn continuing_a_finished_thread_returns_its_values_and_runs_nothing() {
    let saver = Arc::new(InMemorySaver::new());
    let graph = chain(&saver);
    let cfg = thread("finished");

    let first = graph
        .invoke(Flow::update().topic("done"), &cfg)
        .await
        .unwrap();
    let count = saver.checkpoint_count();

    let again = graph.invoke(None, &cfg).await.unwrap();
    assert_eq!(again.values, first.values);
    assert_eq!(again.steps, 0);
    assert_eq!(again.checkpoint, first.checkpoint);
    assert_eq!(saver.checkpoint_count(), count, "no checkpoint for a no-op");
    assert_eq!(["a", "b", "c"].map(|n| runs("finished", n)), [1, 1, 1]);
}

#[tokio::test]
async fn an_unknown_checkpoint_id_is_an_error() {
    let saver = Arc::new(InMemorySaver::new());
    let graph = chain(&saver);
    graph
        .invoke(Flow::update().topic("known"), &thread("known"))
        .await
        .unwrap();
    let count = saver.checkpoint_count();

    let missing = "0000000000000000deadbeef";
    for (thread_id, input) in [
        ("known", None),
        ("known", Some(Flow::update().topic("x"))),
        ("unknown", None),
    ] {
        let cfg = thread(thread_id).checkpoint(missing);
        let err = graph.invoke(input, &cfg).await.unwrap_err();
        match &err {
            RunError::UnknownCheckpoint { thread, id } => {
                assert_eq!(thread, thread_id);
                assert_eq!(id, missing);
            }
            other => panic!("expected UnknownCheckpoint, got {other:?}"),
        }
        assert!(err.to_string().contains(missing), "{err}");
        // Reading an unknown checkpoint is simply nothing.
        assert!(graph.get_state(&cfg).await.unwrap().is_none());
    }
    assert_eq!(saver.checkpoint_count(), count);
    assert_eq!(runs("known", "a"), 1);
    assert_eq!(runs("unknown", "a"), 0);
}

#[tokio::test]
async fn two_threads_are_independent() {
    let saver = Arc::new(InMemorySaver::new());
    let graph = chain(&saver);
    let (left, right) = (thread("left"), thread("right"));

    graph
        .invoke(Flow::update().topic("L1"), &left)
        .await
        .unwrap();
    let r = graph
        .invoke(Flow::update().topic("R"), &right)
        .await
        .unwrap();
    let l = graph
        .invoke(Flow::update().topic("L2"), &left)
        .await
        .unwrap();

    assert_eq!(l.values.total, 222);
    assert_eq!(l.values.topic, "L2");
    assert_eq!(l.values.trace.len(), 6);
    // The right thread started fresh: its steps start at 0 and it saw only its input.
    assert_eq!(r.values.total, 111);
    assert_eq!(r.values.topic, "R");
    assert_eq!(r.values.trace, ["a@0", "b@1", "c@2"]);

    let lh = graph
        .get_state_history(&left, &ListOptions::new())
        .await
        .unwrap();
    let rh = graph
        .get_state_history(&right, &ListOptions::new())
        .await
        .unwrap();
    assert_eq!(lh.len(), 8);
    assert_eq!(rh.len(), 4);
    assert_eq!(saver.checkpoint_count(), 12);
    assert!(lh.iter().all(|s| s.config.thread_id == "left"));
    assert!(rh.iter().all(|s| s.config.thread_id == "right"));
    assert_eq!(steps_of(&rh), [2, 1, 0, -1]);
    assert_parent_chain(&lh);
    assert_parent_chain(&rh);

    // A checkpoint id of one thread is unknown to the other.
    let left_id = id_of(&lh[0]);
    let err = graph
        .invoke(None, &thread("right").checkpoint(left_id.clone()))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, RunError::UnknownCheckpoint { thread, id } if thread == "right" && *id == left_id),
        "{err:?}"
    );

    assert_eq!(
        graph.get_state(&left).await.unwrap().unwrap().values,
        l.values
    );
    assert_eq!(
        graph.get_state(&right).await.unwrap().unwrap().values,
        r.values
    );
    assert_eq!(["a", "b", "c"].map(|n| runs("left", n)), [2, 2, 2]);
    assert_eq!(["a", "b", "c"].map(|n| runs("right", n)), [1, 1, 1]);
}
