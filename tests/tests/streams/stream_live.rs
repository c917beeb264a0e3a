//! Live delivery: a node's custom events reach the consumer while the node (and its
//! step) is still running — each test's node waits for the test to see its event, so
//! late delivery would deadlock (a timeout fails instead); emitting is a no-op without
//! `CUSTOM`; and `stream` runs the same execution as `invoke` (same final state and
//! checkpoints).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use serde_json::json;
use stategraph::checkpoint::{InMemorySaver, ListOptions};
use stategraph::prelude::*;
use stategraph::{RunStream, StreamEvent};
use tokio::sync::Notify;

/// Fails the test instead of hanging when an event never comes.
const PATIENCE: Duration = Duration::from_secs(10);

async fn next_event<S: GraphState>(stream: &mut RunStream<S>, what: &str) -> StreamEvent<S> {
    match tokio::time::timeout(PATIENCE, stream.next()).await {
        Ok(Some(Ok(event))) => event,
        Ok(Some(Err(e))) => panic!("run failed while waiting for {what}: {e}"),
        Ok(None) => panic!("stream ended while waiting for {what}"),
        Err(_) => panic!("no event within {PATIENCE:?} while waiting for {what}: delivered late?"),
    }
}

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Live {
    #[reducer(append)]
    log: Vec<String>,
}

// --- 1. a custom event arrives before its node finishes ----------------------------

static RELEASE: Notify = Notify::const_new();
static WAITER_FINISHED: AtomicBool = AtomicBool::new(false);

#[node]
async fn waiter(_: &Live, ctx: &NodeContext) -> Result<LiveUpdate, NodeError> {
    ctx.emit("waiting for the test").await?;
    // Only released once the test has received the event above.
    RELEASE.notified().await;
    WAITER_FINISHED.store(true, Ordering::SeqCst);
    ctx.emit("released").await?;
    Ok(Live::update().log(["waiter"]))
}

#[tokio::test]
async fn custom_event_arrives_before_the_node_finishes() {
    let graph = StateGraph::<Live>::new()
        .add_node(waiter)
        .add_edge(START, waiter)
        .compile()
        .unwrap();
    let mut stream = graph.stream(
        Live::update(),
        &RunConfig::new(),
        StreamMode::CUSTOM | StreamMode::TASKS | StreamMode::UPDATES | StreamMode::VALUES,
    );
    let mut before = Vec::new();
    loop {
        match next_event(&mut stream, "the first custom event").await {
            StreamEvent::Custom { node, value } => {
                assert_eq!(node, "waiter");
                assert_eq!(value, json!("waiting for the test"));
                break;
            }
            other => before.push(format!("{:?}", other.mode())),
        }
    }
    // Input values and the task start came first; the node has not finished.
    assert_eq!(before, ["StreamMode(VALUES)", "StreamMode(TASKS)"]);
    assert!(!WAITER_FINISHED.load(Ordering::SeqCst));
    RELEASE.notify_one();

    let rest: Vec<StreamEvent<Live>> = tokio::time::timeout(PATIENCE, stream.collect::<Vec<_>>())
        .await
        .expect("the run finishes once released")
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert!(WAITER_FINISHED.load(Ordering::SeqCst));
    assert!(
        matches!(&rest[0], StreamEvent::Custom { value, .. } if *value == json!("released")),
        "{:?}",
        rest[0].mode()
    );
    assert!(matches!(&rest[1], StreamEvent::Updates { node, .. } if node == "waiter"));
    assert!(
        matches!(&rest[2], StreamEvent::TaskResult { node, error: None, .. } if node == "waiter")
    );
    assert!(
        matches!(&rest[3], StreamEvent::Values { step: 0, values } if values.log == ["waiter"])
    );
    assert_eq!(rest.len(), 4);
}

// --- 2. ping-pong while a sibling of the same step still runs ----------------------

static ACK: Notify = Notify::const_new();
static GATE: Notify = Notify::const_new();
static ROUNDS_DONE: AtomicUsize = AtomicUsize::new(0);

/// Emits `round k`, then waits for the test to acknowledge it, five times.
#[node]
async fn talker(_: &Live, ctx: &NodeContext) -> Result<LiveUpdate, NodeError> {
    for k in 0..5 {
        ctx.emit(json!({ "round": k })).await?;
        ACK.notified().await;
        ROUNDS_DONE.fetch_add(1, Ordering::SeqCst);
    }
    Ok(Live::update().log(["talker"]))
}

/// Runs in the same step as `talker` and only finishes when the test opens the gate
/// (after all of `talker`'s rounds): the step is running the whole time.
#[node]
async fn gated(_: &Live) -> LiveUpdate {
    GATE.notified().await;
    Live::update().log(["gated"])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_custom_event_is_delivered_before_the_node_continues() {
    let graph = StateGraph::<Live>::new()
        .add_node(talker)
        .add_node(gated)
        .add_edge(START, talker)
        .add_edge(START, gated)
        .compile()
        .unwrap();
    let mut stream = graph.stream(
        Live::update(),
        &RunConfig::new(),
        StreamMode::CUSTOM | StreamMode::TASKS,
    );
    // Both task starts come before any custom event of their step.
    for node in ["gated", "talker"] {
        match next_event(&mut stream, "a task start").await {
            StreamEvent::TaskStart { node: n, .. } => assert_eq!(n, node),
            other => panic!("expected a task start, got {:?}", other.mode()),
        }
    }
    for k in 0..5 {
        match next_event(&mut stream, "the next round").await {
            StreamEvent::Custom { node, value } => {
                assert_eq!(node, "talker");
                assert_eq!(value, json!({ "round": k }));
            }
            other => panic!("expected round {k}, got {:?}", other.mode()),
        }
        assert_eq!(
            ROUNDS_DONE.load(Ordering::SeqCst),
            k,
            "the node waits for us"
        );
        ACK.notify_one();
    }
    GATE.notify_one();
    let rest: Vec<String> = tokio::time::timeout(PATIENCE, stream.collect::<Vec<_>>())
        .await
        .expect("the run finishes")
        .into_iter()
        .map(|e| match e.unwrap() {
            StreamEvent::TaskResult { node, error, .. } => format!("{node}:{error:?}"),
            other => panic!("unexpected {:?}", other.mode()),
        })
        .collect();
    assert_eq!(rest, ["gated:None", "talker:None"]);
    assert_eq!(ROUNDS_DONE.load(Ordering::SeqCst), 5);
}

// --- 3. more custom events than the buffer holds, and no CUSTOM mode ---------------

#[node]
async fn chatter(_: &Live, ctx: &NodeContext) -> Result<LiveUpdate, NodeError> {
    for k in 0..300 {
        ctx.emit(k).await?;
    }
    Ok(Live::update().log(["chatter"]))
}

fn chatter_graph() -> CompiledGraph<Live> {
    StateGraph::<Live>::new()
        .add_node(chatter)
        .add_edge(START, chatter)
        .compile()
        .unwrap()
}

#[tokio::test]
async fn custom_events_beyond_the_buffer_all_arrive_in_order() {
    let values: Vec<serde_json::Value> = chatter_graph()
        .stream(Live::update(), &RunConfig::new(), StreamMode::CUSTOM)
        .map(|e| match e.unwrap() {
            StreamEvent::Custom { node, value } => {
                assert_eq!(node, "chatter");
                value
            }
            other => panic!("unexpected {:?}", other.mode()),
        })
        .collect()
        .await;
    let expected: Vec<serde_json::Value> = (0..300).map(|k| json!(k)).collect();
    assert_eq!(values, expected);
}

#[tokio::test]
async fn emit_is_a_no_op_without_custom_mode() {
    let graph = chatter_graph();
    // 300 emits would block on a full buffer if they were sent: they are not.
    let events: Vec<StreamEvent<Live>> = tokio::time::timeout(
        PATIENCE,
        graph
            .stream(Live::update(), &RunConfig::new(), StreamMode::UPDATES)
            .map(Result::unwrap)
            .collect::<Vec<_>>(),
    )
    .await
    .unwrap();
    assert_eq!(events.len(), 1);
    assert!(matches!(&events[0], StreamEvent::Updates { node, .. } if node == "chatter"));
    // And `invoke` ignores them too.
    let out = graph
        .invoke(Live::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.values.log, ["chatter"]);
}

// --- 4. invoke and stream: one execution path --------------------------------------

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Work {
    #[reducer(append)]
    log: Vec<String>,
    #[reducer(add)]
    total: u64,
    items: Vec<u64>,
    last: String,
}

#[node]
fn split(s: &Work) -> WorkUpdate {
    Work::update().log([format!("split:{}", s.items.len())])
}

#[node]
async fn square(n: &u64, ctx: &NodeContext) -> Result<WorkUpdate, NodeError> {
    tokio::time::sleep(Duration::from_micros(rand::random_range(0..=1_500))).await;
    ctx.emit(*n).await?;
    Ok(Work::update().total(n * n).log([format!("sq{n}")]))
}

#[node]
fn side(_: &Work) -> WorkUpdate {
    Work::update().log(["side"]).last("side")
}

#[node]
fn side2(_: &Work) -> WorkUpdate {
    Work::update().log(["side2"])
}

#[node]
fn gather(s: &Work) -> WorkUpdate {
    Work::update()
        .log([format!("gather:{}", s.total)])
        .last("gather")
}

fn work_graph(options: CompileOptions) -> CompiledGraph<Work> {
    StateGraph::<Work>::new()
        .add_node(split)
        .add_node(square)
        .add_node(side)
        .add_node(side2)
        .add_node(gather)
        .add_edge(START, split)
        .add_edge(START, side)
        .add_edge(side, side2)
        .add_conditional_edges(
            split,
            |s: &Work| {
                Route::sends(
                    s.items
                        .iter()
                        .map(|&i| stategraph::Send::new(square, i))
                        .collect::<Vec<_>>(),
                )
            },
            [square],
        )
        .add_edge((square, side2), gather)
        .compile_with(options)
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn invoke_and_stream_reach_the_same_final_state() {
    let input = || Work::update().items(vec![5, 2, 9, 1, 7, 3]);
    for round in 0..10 {
        // Without a checkpointer.
        let graph = work_graph(CompileOptions::new());
        let invoked = graph.invoke(input(), &RunConfig::new()).await.unwrap();
        let events: Vec<StreamEvent<Work>> = graph
            .stream(input(), &RunConfig::new(), StreamMode::ALL)
            .map(Result::unwrap)
            .collect()
            .await;
        let streamed = events
            .iter()
            .rev()
            .find_map(|e| match e {
                StreamEvent::Values { values, .. } => Some(values.clone()),
                _ => None,
            })
            .unwrap();
        assert_eq!(streamed, invoked.values, "round {round}");
        let steps = events
            .iter()
            .filter(|e| matches!(e, StreamEvent::Values { step, .. } if *step >= 0))
            .count();
        assert_eq!(steps, invoked.steps);
        assert_eq!(
            invoked.values.log,
            [
                "side",
                "split:6",
                "side2",
                "sq5",
                "sq2",
                "sq9",
                "sq1",
                "sq7",
                "sq3",
                "gather:169"
            ]
        );

        // With a checkpointer: the same checkpoints on both threads.
        let graph = work_graph(CompileOptions::new().checkpointer(InMemorySaver::new()));
        let by_invoke = RunConfig::new().thread("invoke");
        let by_stream = RunConfig::new().thread("stream");
        let invoked = graph.invoke(input(), &by_invoke).await.unwrap();
        let streamed: Vec<_> = graph
            .stream(input(), &by_stream, StreamMode::VALUES)
            .map(Result::unwrap)
            .collect()
            .await;
        assert!(
            matches!(streamed.last(), Some(StreamEvent::Values { values, .. }) if *values == invoked.values)
        );
        let a = graph
            .get_state_history(&by_invoke, &ListOptions::new())
            .await
            .unwrap();
        let b = graph
            .get_state_history(&by_stream, &ListOptions::new())
            .await
            .unwrap();
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(x.values, y.values);
            assert_eq!(x.next, y.next);
            assert_eq!(x.metadata.step, y.metadata.step);
            assert_eq!(x.metadata.source, y.metadata.source);
        }
    }
}
