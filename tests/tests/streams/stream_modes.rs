//! Stream modes one by one: `CHECKPOINTS` yields one event per saved checkpoint with
//! its source, step, parent and next nodes (none without a checkpointer); `DEBUG`
//! wraps task starts, task results and checkpoints with their kind and step; every
//! event belongs to a requested mode; a paused run ends with an `Interrupt` event
//! (dynamic: its value; static breakpoint: `null`) whatever the modes; a failing run
//! ends with `Err(RunError::Node)` after the failed task's result; and `stream`
//! outside a tokio runtime yields `RunError::NoRuntime`.

use futures::StreamExt;
use serde_json::json;
use stategraph::checkpoint::{CheckpointSource, InMemorySaver, ListOptions};
use stategraph::prelude::*;
use stategraph::{DebugKind, RunInput, RunStream};

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Trail {
    #[reducer(append)]
    log: Vec<String>,
    #[reducer(add)]
    total: u32,
}

#[node]
fn one(_: &Trail) -> TrailUpdate {
    Trail::update().log(["one"])
}

#[node]
async fn two(_: &Trail, ctx: &NodeContext) -> Result<TrailUpdate, NodeError> {
    ctx.emit("two is running").await?;
    Ok(Trail::update().log(["two"]))
}

#[node]
fn three(_: &Trail) -> TrailUpdate {
    Trail::update().log(["three"])
}

#[node]
async fn add(n: &u32) -> TrailUpdate {
    tokio::time::sleep(std::time::Duration::from_micros(u64::from(*n) * 100)).await;
    Trail::update().total(*n)
}

/// `START → one → {two, add×3 (Sends)} → three`.
fn trail(options: CompileOptions) -> CompiledGraph<Trail> {
    StateGraph::<Trail>::new()
        .add_node(one)
        .add_node(two)
        .add_node(three)
        .add_node(add)
        .add_edge(START, one)
        .add_edge(one, two)
        .add_conditional_edges(
            one,
            |_: &Trail| {
                Route::sends([
                    stategraph::Send::new(add, 3u32),
                    stategraph::Send::new(add, 1u32),
                    stategraph::Send::new(add, 2u32),
                ])
            },
            [add],
        )
        .add_edge(two, three)
        .add_edge(add, three)
        .compile_with(options)
        .unwrap()
}

fn saver() -> CompileOptions {
    CompileOptions::new().checkpointer(InMemorySaver::new())
}

async fn events<S: GraphState>(stream: RunStream<S>) -> Vec<StreamEvent<S>> {
    stream.map(Result::unwrap).collect().await
}

// --- CHECKPOINTS ----------------------------------------------------------------------

#[tokio::test]
async fn checkpoints_mode_yields_one_event_per_saved_checkpoint() {
    let graph = trail(saver());
    let cfg = RunConfig::new().thread("checkpoints");
    let evs = events(graph.stream(Trail::update(), &cfg, StreamMode::CHECKPOINTS)).await;
    let history = graph
        .get_state_history(&cfg, &ListOptions::new())
        .await
        .unwrap();
    assert_eq!(evs.len(), history.len());
    assert_eq!(evs.len(), 4, "input + 3 steps");
    let mut parent: Option<String> = None;
    let expected = [
        (CheckpointSource::Input, -1, vec!["one"]),
        (CheckpointSource::Loop, 0, vec!["two", "add", "add", "add"]),
        (CheckpointSource::Loop, 1, vec!["three"]),
        (CheckpointSource::Loop, 2, vec![]),
    ];
    for ((ev, stored), (source, step, next_nodes)) in
        evs.iter().zip(history.iter().rev()).zip(expected)
    {
        let StreamEvent::Checkpoint {
            config,
            parent_config,
            values,
            metadata,
            next,
        } = ev
        else {
            panic!("expected a checkpoint event, got {:?}", ev.mode());
        };
        assert_eq!(metadata.source, source);
        assert_eq!(metadata.step, step);
        assert_eq!(*next, next_nodes);
        assert_eq!(config.thread_id, "checkpoints");
        assert_eq!(config.checkpoint_id, stored.config.checkpoint_id);
        assert_eq!(*values, stored.values);
        assert_eq!(metadata.source, stored.metadata.source);
        assert_eq!(metadata.step, stored.metadata.step);
        assert_eq!(
            parent_config.as_ref().and_then(|p| p.checkpoint_id.clone()),
            parent
        );
        assert_eq!(
            parent_config.as_ref().map(|p| p.checkpoint_id.clone()),
            stored
                .parent_config
                .as_ref()
                .map(|p| p.checkpoint_id.clone())
        );
        parent = config.checkpoint_id.clone();
    }
}

#[tokio::test]
async fn checkpoints_mode_follows_the_durability_mode() {
    // `Exit`: one checkpoint at the end.
    let graph = trail(saver());
    let cfg = RunConfig::new().thread("exit").durability(Durability::Exit);
    let evs = events(graph.stream(Trail::update(), &cfg, StreamMode::CHECKPOINTS)).await;
    assert_eq!(evs.len(), 1);
    let StreamEvent::Checkpoint { metadata, next, .. } = &evs[0] else {
        panic!("expected a checkpoint");
    };
    assert_eq!(
        (metadata.source, metadata.step),
        (CheckpointSource::Loop, 2)
    );
    assert!(next.is_empty());

    // `Async`: every checkpoint, like `Sync`.
    let cfg = RunConfig::new()
        .thread("async")
        .durability(Durability::Async);
    let evs = events(graph.stream(Trail::update(), &cfg, StreamMode::CHECKPOINTS)).await;
    let steps: Vec<i64> = evs
        .iter()
        .map(|e| match e {
            StreamEvent::Checkpoint { metadata, .. } => metadata.step,
            other => panic!("unexpected {:?}", other.mode()),
        })
        .collect();
    assert_eq!(steps, [-1, 0, 1, 2]);
    let history = graph
        .get_state_history(&cfg, &ListOptions::new())
        .await
        .unwrap();
    assert_eq!(history.len(), 4);
}

#[tokio::test]
async fn checkpoints_mode_without_a_checkpointer_yields_nothing() {
    let graph = trail(CompileOptions::new());
    let items: Vec<_> = graph
        .stream(Trail::update(), &RunConfig::new(), StreamMode::CHECKPOINTS)
        .collect()
        .await;
    assert!(items.is_empty(), "{} items", items.len());
    // Debug then wraps only task events.
    let kinds: Vec<DebugKind> =
        events(graph.stream(Trail::update(), &RunConfig::new(), StreamMode::DEBUG))
            .await
            .into_iter()
            .map(|e| match e {
                StreamEvent::Debug { kind, .. } => kind,
                other => panic!("unexpected {:?}", other.mode()),
            })
            .collect();
    assert!(!kinds.contains(&DebugKind::Checkpoint));
    assert_eq!(kinds.len(), 2 * (1 + 4 + 1));
}

// --- DEBUG ----------------------------------------------------------------------------

#[tokio::test]
async fn debug_mode_wraps_task_and_checkpoint_events_with_kind_and_step() {
    let graph = trail(saver());
    let cfg = RunConfig::new().thread("debug");
    let evs = events(graph.stream(Trail::update(), &cfg, StreamMode::DEBUG)).await;
    let mut rows = Vec::new();
    let mut last_ts = String::new();
    for ev in &evs {
        let StreamEvent::Debug {
            step,
            timestamp,
            kind,
            event,
        } = ev
        else {
            panic!("DEBUG alone yields only debug events, got {:?}", ev.mode());
        };
        assert!(
            timestamp.ends_with('Z') && timestamp.contains('T'),
            "{timestamp}"
        );
        assert!(*timestamp >= last_ts, "timestamps go forward");
        last_ts.clone_from(timestamp);
        let (inner_step, what) = match (&**event, kind) {
            (StreamEvent::TaskStart { step, id, .. }, DebugKind::Task) => (*step, id.clone()),
            (
                StreamEvent::TaskResult {
                    step, id, error, ..
                },
                DebugKind::TaskResult,
            ) => {
                assert_eq!(*error, None);
                (*step, format!("{id} done"))
            }
            (StreamEvent::Checkpoint { metadata, .. }, DebugKind::Checkpoint) => {
                (metadata.step, "checkpoint".to_string())
            }
            (inner, kind) => panic!("{kind:?} wraps a {:?} event", inner.mode()),
        };
        assert_eq!(*step, inner_step, "{what}");
        rows.push(format!("{step} {what}"));
    }
    assert_eq!(
        rows,
        [
            "-1 checkpoint",
            "0 0:one",
            "0 0:one done",
            "0 checkpoint",
            "1 1:two",
            "1 1:add:send0",
            "1 1:add:send1",
            "1 1:add:send2",
            "1 1:two done",
            "1 1:add:send0 done",
            "1 1:add:send1 done",
            "1 1:add:send2 done",
            "1 checkpoint",
            "2 2:three",
            "2 2:three done",
            "2 checkpoint",
        ]
    );
}

// --- mode filtering -------------------------------------------------------------------

#[tokio::test]
async fn each_mode_yields_exactly_its_share_of_the_full_stream() {
    let graph = trail(saver());
    let all = events(graph.stream(
        Trail::update(),
        &RunConfig::new().thread("all"),
        StreamMode::ALL,
    ))
    .await;
    let modes = [
        StreamMode::VALUES,
        StreamMode::UPDATES,
        StreamMode::TASKS,
        StreamMode::CHECKPOINTS,
        StreamMode::DEBUG,
        StreamMode::CUSTOM,
    ];
    let mut total = 0;
    for (k, mode) in modes.into_iter().enumerate() {
        let cfg = RunConfig::new().thread(format!("mode-{k}"));
        let only = events(graph.stream(Trail::update(), &cfg, mode)).await;
        assert!(!only.is_empty(), "{mode:?}");
        assert!(only.iter().all(|e| e.mode() == mode), "{mode:?}");
        let expected = all.iter().filter(|e| e.mode() == mode).count();
        assert_eq!(only.len(), expected, "{mode:?}");
        total += expected;
    }
    assert_eq!(total, all.len());

    let pair = events(graph.stream(
        Trail::update(),
        &RunConfig::new().thread("pair"),
        StreamMode::UPDATES | StreamMode::CUSTOM,
    ))
    .await;
    let shown: Vec<String> = pair
        .iter()
        .map(|e| match e {
            StreamEvent::Updates { step, node, .. } => format!("{step}:{node}"),
            StreamEvent::Custom { node, value } => format!("custom:{node}:{value}"),
            other => panic!("unexpected {:?}", other.mode()),
        })
        .collect();
    assert_eq!(
        shown,
        [
            "0:one",
            "custom:two:\"two is running\"",
            "1:two",
            "1:add",
            "1:add",
            "1:add",
            "2:three"
        ]
    );
}

// --- interrupts -----------------------------------------------------------------------

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Ask {
    #[reducer(append)]
    log: Vec<String>,
}

#[node]
fn prepare(_: &Ask) -> AskUpdate {
    Ask::update().log(["prepare"])
}

#[node]
fn ask(_: &Ask, ctx: &NodeContext) -> Result<AskUpdate, NodeError> {
    let name: String = ctx.interrupt(json!({ "question": "name?" }))?;
    Ok(Ask::update().log([format!("hello {name}")]))
}

#[node]
fn finish(_: &Ask) -> AskUpdate {
    Ask::update().log(["finish"])
}

fn ask_graph(options: CompileOptions) -> CompiledGraph<Ask> {
    StateGraph::<Ask>::new()
        .add_node(prepare)
        .add_node(ask)
        .add_node(finish)
        .add_edge(START, prepare)
        .add_edge(prepare, ask)
        .add_edge(ask, finish)
        .compile_with(options)
        .unwrap()
}

#[tokio::test]
async fn a_dynamic_interrupt_ends_the_stream_with_its_value_whatever_the_modes() {
    for (k, mode) in [
        StreamMode::VALUES,
        StreamMode::UPDATES,
        StreamMode::CUSTOM,
        StreamMode::ALL,
    ]
    .into_iter()
    .enumerate()
    {
        let graph = ask_graph(saver());
        let cfg = RunConfig::new().thread(format!("ask-{k}"));
        let evs = events(graph.stream(Ask::update(), &cfg, mode)).await;
        let Some(StreamEvent::Interrupt { interrupts }) = evs.last() else {
            panic!("{mode:?}: the stream ends with an interrupt event");
        };
        assert_eq!(
            evs.iter()
                .filter(|e| matches!(e, StreamEvent::Interrupt { .. }))
                .count(),
            1
        );
        assert_eq!(interrupts.len(), 1);
        assert_eq!(interrupts[0].node, "ask");
        assert_eq!(interrupts[0].value, json!({ "question": "name?" }));
        assert_eq!(evs.last().unwrap().mode(), StreamMode::ALL);
        // The same interrupt `get_state` reports.
        let snap = graph.get_state(&cfg).await.unwrap().unwrap();
        assert_eq!(snap.interrupts, *interrupts);

        // Resuming streams to the end, without another interrupt event.
        let resume: RunInput<Ask> = Command::resume("Ada").into();
        let rest = events(graph.stream(resume, &cfg, StreamMode::VALUES)).await;
        assert!(
            rest.iter()
                .all(|e| !matches!(e, StreamEvent::Interrupt { .. }))
        );
        let Some(StreamEvent::Values { values, .. }) = rest.last() else {
            panic!("the resumed run ends with its values");
        };
        assert_eq!(values.log, ["prepare", "hello Ada", "finish"]);
    }
}

#[tokio::test]
async fn a_dynamic_interrupt_in_the_stream_matches_invoke() {
    let graph = ask_graph(saver());
    let invoked = graph
        .invoke(Ask::update(), &RunConfig::new().thread("by-invoke"))
        .await
        .unwrap();
    let evs = events(graph.stream(
        Ask::update(),
        &RunConfig::new().thread("by-stream"),
        StreamMode::TASKS,
    ))
    .await;
    let Some(StreamEvent::Interrupt { interrupts }) = evs.last() else {
        panic!("ends with an interrupt");
    };
    assert_eq!(interrupts.len(), invoked.interrupts.len());
    assert_eq!(interrupts[0].value, invoked.interrupts[0].value);
    // The paused task's result carries the same interrupt.
    let Some(StreamEvent::TaskResult {
        node,
        interrupts: paused,
        error,
        result,
        ..
    }) = evs.iter().rev().nth(1)
    else {
        panic!("the task result of the paused task comes right before");
    };
    assert_eq!(node, "ask");
    assert_eq!(paused, interrupts);
    assert_eq!(*error, None);
    assert!(result.is_empty());
}

#[tokio::test]
async fn static_breakpoints_end_the_stream_with_null_interrupts() {
    // Compiled `interrupt_before`.
    let graph = ask_graph(saver().interrupt_before([finish]));
    let cfg = RunConfig::new().thread("before");
    // Answer `ask` first, so only the breakpoint stops the run.
    let evs = events(graph.stream(Ask::update(), &cfg, StreamMode::VALUES)).await;
    assert!(
        matches!(evs.last(), Some(StreamEvent::Interrupt { interrupts }) if interrupts[0].node == "ask")
    );
    let resume: RunInput<Ask> = Command::resume("Bo").into();
    let evs = events(graph.stream(resume, &cfg, StreamMode::VALUES)).await;
    let Some(StreamEvent::Interrupt { interrupts }) = evs.last() else {
        panic!("ends with the breakpoint");
    };
    assert_eq!(interrupts.len(), 1);
    assert_eq!(interrupts[0].node, "finish");
    assert_eq!(interrupts[0].value, serde_json::Value::Null);
    let Some(StreamEvent::Values { values, .. }) = evs.iter().rev().nth(1) else {
        panic!("the committed step's values come before");
    };
    assert_eq!(values.log, ["prepare", "hello Bo"]);
    // Continuing runs `finish`; no interrupt event.
    let evs = events(graph.stream(None, &cfg, StreamMode::UPDATES)).await;
    let nodes: Vec<&str> = evs
        .iter()
        .map(|e| match e {
            StreamEvent::Updates { node, .. } => node.as_str(),
            other => panic!("unexpected {:?}", other.mode()),
        })
        .collect();
    assert_eq!(nodes, ["finish"]);

    // Per-run `interrupt_after`, streamed with TASKS only.
    let graph = ask_graph(saver());
    let cfg = RunConfig::new().thread("after").interrupt_after([prepare]);
    let evs = events(graph.stream(Ask::update(), &cfg, StreamMode::TASKS)).await;
    let Some(StreamEvent::Interrupt { interrupts }) = evs.last() else {
        panic!("ends with the breakpoint");
    };
    assert_eq!(interrupts.len(), 1);
    assert_eq!(interrupts[0].node, "prepare");
    assert_eq!(interrupts[0].value, serde_json::Value::Null);
}

// --- failures -------------------------------------------------------------------------

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Risky {
    #[reducer(append)]
    log: Vec<String>,
}

#[derive(Debug)]
struct Broken(u32);

impl std::fmt::Display for Broken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "broken {}", self.0)
    }
}

impl std::error::Error for Broken {}

#[node]
async fn breaks(_: &Risky) -> Result<RiskyUpdate, Broken> {
    tokio::task::yield_now().await;
    Err(Broken(7))
}

#[node]
fn holds(_: &Risky) -> RiskyUpdate {
    Risky::update().log(["holds"])
}

#[tokio::test]
async fn a_failing_run_ends_with_the_node_error_after_its_task_result() {
    let graph = StateGraph::<Risky>::new()
        .add_node(breaks)
        .add_node(holds)
        .add_edge(START, breaks)
        .add_edge(START, holds)
        .compile()
        .unwrap();
    let items: Vec<Result<StreamEvent<Risky>, RunError>> = graph
        .stream(Risky::update(), &RunConfig::new(), StreamMode::TASKS)
        .collect()
        .await;
    let (last, before) = items.split_last().unwrap();
    let Err(err) = last else {
        panic!("the stream ends with the run's error");
    };
    match err {
        RunError::Node { node, step, .. } => {
            assert_eq!(node, "breaks");
            assert_eq!(*step, 0);
        }
        other => panic!("expected RunError::Node, got {other:?}"),
    }
    assert_eq!(
        err.node_error()
            .unwrap()
            .downcast_ref::<Broken>()
            .unwrap()
            .0,
        7
    );
    assert!(before.iter().all(Result::is_ok));
    let failed = before.iter().rev().find_map(|e| match e {
        Ok(StreamEvent::TaskResult {
            id,
            node,
            error: Some(error),
            ..
        }) => Some((id.clone(), node.clone(), error.clone())),
        _ => None,
    });
    assert_eq!(
        failed,
        Some((
            "0:breaks".to_string(),
            "breaks".to_string(),
            "broken 7".into()
        ))
    );
    // And `invoke` fails the same way.
    let invoked = graph
        .invoke(Risky::update(), &RunConfig::new())
        .await
        .unwrap_err();
    assert_eq!(invoked.to_string(), err.to_string());
}

/// Every task that started and finished in a failed step gets a task-result event:
/// `holds` finished (its writes are even saved as pending writes), so a consumer of
/// `TASKS` must not see it start and never end.
#[tokio::test]
async fn a_finished_sibling_of_a_failed_task_reports_its_result() {
    let graph = StateGraph::<Risky>::new()
        .add_node(breaks)
        .add_node(holds)
        .add_edge(START, breaks)
        .add_edge(START, holds)
        .compile_with(saver())
        .unwrap();
    let cfg = RunConfig::new().thread("sibling");
    let items: Vec<Result<StreamEvent<Risky>, RunError>> = graph
        .stream(Risky::update(), &cfg, StreamMode::TASKS)
        .collect()
        .await;
    let shown: Vec<String> = items
        .iter()
        .map(|e| match e {
            Ok(StreamEvent::TaskStart { id, .. }) => format!("start {id}"),
            Ok(StreamEvent::TaskResult { id, error, .. }) => format!("result {id} {error:?}"),
            Ok(other) => panic!("unexpected {:?}", other.mode()),
            Err(e) => format!("error {e}"),
        })
        .collect();
    // `holds` finished: it is saved as done.
    let snap = graph.get_state(&cfg).await.unwrap().unwrap();
    assert!(snap.tasks.iter().any(|t| t.node == "holds" && t.has_writes));
    assert_eq!(
        shown,
        [
            "start 0:breaks",
            "start 0:holds",
            "result 0:breaks Some(\"broken 7\")",
            "result 0:holds None",
            "error node `breaks` failed in superstep 0: broken 7",
        ]
    );
}

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Batch {
    #[reducer(append)]
    done: Vec<u32>,
}

#[node]
fn fan(_: &Batch) -> BatchUpdate {
    Batch::update()
}

#[node]
async fn item(n: &u32) -> Result<BatchUpdate, Broken> {
    // Later payloads finish first: 3 succeeds, then 2 fails while 0 and 1 still run.
    tokio::time::sleep(std::time::Duration::from_millis(u64::from(4 - *n))).await;
    if *n == 2 {
        return Err(Broken(*n));
    }
    Ok(Batch::update().done([*n]))
}

/// The failed task's result names that task, not the first task of its node.
#[tokio::test(start_paused = true)]
async fn a_failed_send_task_reports_its_own_task_id() {
    let graph = StateGraph::<Batch>::new()
        .add_node(fan)
        .add_node(item)
        .add_edge(START, fan)
        .add_conditional_edges(
            fan,
            |_: &Batch| Route::sends((0..4u32).map(|n| stategraph::Send::new(item, n))),
            [item],
        )
        .compile()
        .unwrap();
    let items: Vec<Result<StreamEvent<Batch>, RunError>> = graph
        .stream(Batch::update(), &RunConfig::new(), StreamMode::TASKS)
        .collect()
        .await;
    assert!(
        matches!(items.last(), Some(Err(RunError::Node { node, step: 1, .. })) if node == "item")
    );
    let failed: Vec<(String, Option<serde_json::Value>)> = items
        .iter()
        .filter_map(|e| match e {
            Ok(StreamEvent::TaskResult {
                id, error: Some(_), ..
            }) => Some(id.clone()),
            _ => None,
        })
        .map(|id| {
            let input = items.iter().find_map(|e| match e {
                Ok(StreamEvent::TaskStart {
                    id: started, input, ..
                }) if *started == id => Some(input.clone()),
                _ => None,
            });
            (id, input.flatten())
        })
        .collect();
    assert_eq!(failed, [("1:item:send2".to_string(), Some(json!(2)))]);
}

#[tokio::test]
async fn a_run_over_its_recursion_limit_ends_with_that_error() {
    let graph = trail(CompileOptions::new());
    let items: Vec<Result<StreamEvent<Trail>, RunError>> = graph
        .stream(
            Trail::update(),
            &RunConfig::new().recursion_limit(2),
            StreamMode::VALUES,
        )
        .collect()
        .await;
    let steps: Vec<i64> = items
        .iter()
        .filter_map(|e| match e {
            Ok(StreamEvent::Values { step, .. }) => Some(*step),
            _ => None,
        })
        .collect();
    assert_eq!(steps, [-1, 0, 1]);
    assert!(
        matches!(
            items.last(),
            Some(Err(RunError::RecursionLimit { limit: 2 }))
        ),
        "{:?}",
        items.last()
    );
}

#[node]
fn explodes(_: &Risky) -> RiskyUpdate {
    panic!("node panicked on purpose");
}

/// `invoke` propagates a node's panic; a stream must not end as if the run had
/// succeeded. Either the panic reaches the consumer or the stream ends with `Err`.
#[tokio::test]
async fn a_panicking_node_does_not_end_the_stream_as_a_success() {
    let consumer = tokio::spawn(async {
        let graph = StateGraph::<Risky>::new()
            .add_node(explodes)
            .add_edge(START, explodes)
            .compile()
            .unwrap();
        graph
            .stream(Risky::update(), &RunConfig::new(), StreamMode::VALUES)
            .map(|e| e.map(|ev| format!("{:?}", ev.mode())))
            .collect::<Vec<_>>()
            .await
    });
    match consumer.await {
        Err(e) if e.is_panic() => {}
        Err(e) => panic!("consumer failed: {e}"),
        Ok(items) => assert!(
            matches!(items.last(), Some(Err(_))),
            "the stream ended cleanly after a node panicked: {items:?}"
        ),
    }
}

// --- forks ----------------------------------------------------------------------------

/// A run from an older `checkpoint_id` saves a `fork` checkpoint first; `CHECKPOINTS`
/// reports every checkpoint the run saves, that one included.
#[tokio::test]
async fn a_forked_run_streams_its_fork_checkpoint() {
    let graph = trail(saver());
    let cfg = RunConfig::new().thread("fork");
    graph.invoke(Trail::update(), &cfg).await.unwrap();
    let history = graph
        .get_state_history(&cfg, &ListOptions::new())
        .await
        .unwrap();
    // Fork from step 0's checkpoint.
    let at = history
        .iter()
        .find(|s| s.metadata.step == 0)
        .unwrap()
        .config
        .checkpoint_id
        .clone()
        .unwrap();
    let evs =
        events(graph.stream(None, &cfg.clone().checkpoint(at), StreamMode::CHECKPOINTS)).await;
    let after = graph
        .get_state_history(&cfg, &ListOptions::new())
        .await
        .unwrap();
    let saved = after.len() - history.len();
    let streamed: Vec<(CheckpointSource, i64)> = evs
        .iter()
        .map(|e| match e {
            StreamEvent::Checkpoint { metadata, .. } => (metadata.source, metadata.step),
            other => panic!("unexpected {:?}", other.mode()),
        })
        .collect();
    let mut stored: Vec<(CheckpointSource, i64)> = after[..saved]
        .iter()
        .map(|s| (s.metadata.source, s.metadata.step))
        .collect();
    stored.reverse();
    assert_eq!(streamed, stored, "one event per saved checkpoint");
    assert_eq!(streamed.first(), Some(&(CheckpointSource::Fork, 1)));
}

// --- errors before the run ----------------------------------------------------------

#[tokio::test]
async fn a_missing_thread_id_is_the_only_item() {
    let graph = trail(saver());
    let items: Vec<_> = graph
        .stream(Trail::update(), &RunConfig::new(), StreamMode::ALL)
        .collect()
        .await;
    assert_eq!(items.len(), 1);
    assert!(
        matches!(items[0], Err(RunError::MissingThreadId)),
        "{:?}",
        items[0]
    );
}

#[test]
fn stream_outside_a_tokio_runtime_yields_no_runtime() {
    let graph = trail(CompileOptions::new());
    let stream = graph.stream(Trail::update(), &RunConfig::new(), StreamMode::ALL);
    let items: Vec<_> = futures::executor::block_on(stream.collect::<Vec<_>>());
    assert_eq!(items.len(), 1);
    assert!(
        matches!(items[0], Err(RunError::NoRuntime)),
        "{:?}",
        items[0]
    );
    assert!(
        items[0]
            .as_ref()
            .unwrap_err()
            .to_string()
            .contains("tokio runtime")
    );
}
