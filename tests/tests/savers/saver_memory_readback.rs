//! The in-memory saver stores checkpoints in a compact form of its own (names shared
//! through a table, each checkpoint one buffer); what it returns must be exactly what
//! it was given. A recording saver in front of it keeps every save as handed over,
//! and each stored checkpoint is read back and compared with it: after runs with
//! subgraph namespaces, `Send` payloads and appended values, a fork, `update_state`,
//! a copied and a deleted thread, and with long texts the saver shares by content.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use serde_json::json;
use stategraph::BoxFuture;
use stategraph::checkpoint::{
    Checkpoint, CheckpointConfig, CheckpointMetadata, CheckpointSaver, CheckpointSource,
    ListOptions, PendingWrite, PlannedTask, SaveOp, StepRecord, StoredValue, TaskRecord,
    new_checkpoint_id, now_rfc3339,
};
use stategraph::prelude::*;
use stategraph_tests::intercept::{Intercepted, OnWrite, Write};
use stategraph_tests::nested::{Pipeline, pipeline_graph};

/// Keeps a copy of every save an [`Intercepted`] in-memory saver is handed.
#[derive(Default)]
struct Recording(Mutex<Vec<SaveOp>>);

type Recorded = Intercepted<Recording>;

impl OnWrite for Recording {
    fn before<'a>(&'a self, write: Write<'a>) -> BoxFuture<'a, ()> {
        let mut saves = self.0.lock().unwrap();
        match write {
            Write::Put {
                config,
                checkpoint,
                metadata,
            } => saves.push(SaveOp::Checkpoint {
                config: config.clone(),
                checkpoint: checkpoint.clone(),
                metadata: metadata.clone(),
            }),
            Write::PutWrites { config, writes } => saves.push(SaveOp::Writes {
                config: config.clone(),
                writes: writes.to_vec(),
            }),
            Write::Batch(ops) => saves.extend(ops.iter().cloned()),
        }
        Box::pin(async {})
    }
}

/// What a thread's namespace should read back as, built from the saves as handed
/// over: checkpoints in save order, and pending writes by checkpoint, keyed by task
/// id and index (a task's first write is kept; a runtime record, `__…`, replaces).
#[derive(Default)]
struct Expected {
    checkpoints: Vec<(Checkpoint, CheckpointMetadata, Option<String>)>,
    writes: HashMap<String, BTreeMap<(String, u32), PendingWrite>>,
}

fn expected(saves: &[SaveOp], thread: &str) -> BTreeMap<String, Expected> {
    let mut out: BTreeMap<String, Expected> = BTreeMap::new();
    for op in saves {
        match op {
            SaveOp::Checkpoint {
                config,
                checkpoint,
                metadata,
            } if config.thread_id == thread => {
                out.entry(config.checkpoint_ns.clone())
                    .or_default()
                    .checkpoints
                    .push((
                        checkpoint.clone(),
                        metadata.clone(),
                        config.checkpoint_id.clone(),
                    ));
            }
            SaveOp::Writes { config, writes } if config.thread_id == thread => {
                let slot = out
                    .entry(config.checkpoint_ns.clone())
                    .or_default()
                    .writes
                    .entry(config.checkpoint_id.clone().unwrap_or_default())
                    .or_default();
                for w in writes {
                    let key = (w.task_id.clone(), w.idx);
                    if w.is_runtime_record() || !slot.contains_key(&key) {
                        slot.insert(key, w.clone());
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// Every checkpoint `saves` stored for `thread` (the `keep` newest of each
/// namespace) reads back, under `read_as`, exactly as it was saved, one by one and
/// through `list`. Returns how many were compared.
async fn reads_back_as_saved(
    saver: &dyn CheckpointSaver,
    saves: &[SaveOp],
    thread: &str,
    read_as: &str,
    keep: usize,
) -> usize {
    let mut compared = 0;
    for (ns, mut exp) in expected(saves, thread) {
        let dropped = exp.checkpoints.len().saturating_sub(keep);
        exp.checkpoints.drain(..dropped);
        let at = |id: &str| CheckpointConfig {
            thread_id: read_as.to_string(),
            checkpoint_ns: ns.clone(),
            checkpoint_id: Some(id.to_string()),
        };
        let mut one_by_one = Vec::new();
        for (checkpoint, metadata, parent) in &exp.checkpoints {
            let got = saver
                .get_tuple(&at(&checkpoint.id))
                .await
                .unwrap()
                .unwrap_or_else(|| panic!("checkpoint {} of ns {ns:?} is stored", checkpoint.id));
            assert_eq!(&got.checkpoint, checkpoint, "checkpoint of ns {ns:?}");
            assert_eq!(&got.metadata, metadata, "metadata of ns {ns:?}");
            assert_eq!(got.config, at(&checkpoint.id));
            assert_eq!(got.parent_config, parent.as_deref().map(at));
            let writes: Vec<PendingWrite> = exp
                .writes
                .get(&checkpoint.id)
                .map(|w| w.values().cloned().collect())
                .unwrap_or_default();
            assert_eq!(got.pending_writes, writes, "writes after {}", checkpoint.id);
            one_by_one.push(got);
            compared += 1;
        }
        let mut listed = saver
            .list(
                &CheckpointConfig {
                    thread_id: read_as.to_string(),
                    checkpoint_ns: ns.clone(),
                    checkpoint_id: None,
                },
                &ListOptions::new(),
            )
            .await
            .unwrap();
        listed.reverse();
        assert_eq!(listed, one_by_one, "list of ns {ns:?}, oldest first");
    }
    compared
}

#[tokio::test]
async fn checkpoints_of_real_runs_read_back_exactly_as_saved() {
    let saver = Arc::new(Recorded::new(Recording::default()));
    let graph = pipeline_graph(saver.clone(), 2);
    let a = RunConfig::new().thread("a");
    graph
        .invoke(Pipeline::update().rounds(2), &a)
        .await
        .unwrap();
    // A fork from the middle of the thread, then an update written from outside.
    let history = graph
        .get_state_history(&a, &ListOptions::new())
        .await
        .unwrap();
    let middle = history[history.len() / 2].config.checkpoint_id.clone();
    graph
        .invoke(None, &a.clone().checkpoint(middle.unwrap()))
        .await
        .unwrap();
    graph
        .update_state(&a, Pipeline::update().total(7u64))
        .await
        .unwrap();
    let b = RunConfig::new().thread("b").durability(Durability::Sync);
    graph
        .invoke(Pipeline::update().rounds(1), &b)
        .await
        .unwrap();

    let saves = saver.hook.0.lock().unwrap().clone();
    let sources: Vec<CheckpointSource> = saves
        .iter()
        .filter_map(|op| match op {
            SaveOp::Checkpoint { metadata, .. } => Some(metadata.source),
            SaveOp::Writes { .. } => None,
        })
        .collect();
    for source in [
        CheckpointSource::Input,
        CheckpointSource::Loop,
        CheckpointSource::Fork,
        CheckpointSource::Update,
    ] {
        assert!(
            sources.contains(&source),
            "the runs wrote a {source:?} checkpoint"
        );
    }
    assert!(
        expected(&saves, "a").len() > 2,
        "subgraph namespaces were saved"
    );
    assert!(
        saves
            .iter()
            .any(|op| matches!(op, SaveOp::Checkpoint { checkpoint, .. }
            if checkpoint.next.iter().any(|t| t.payload.is_some()))),
        "a checkpoint planned Send tasks"
    );

    let inner = &saver.inner;
    let all = usize::MAX;
    let in_a = reads_back_as_saved(inner, &saves, "a", "a", all).await;
    let in_b = reads_back_as_saved(inner, &saves, "b", "b", all).await;
    assert_eq!(in_a + in_b, inner.checkpoint_count());

    // A copy reads back the same; deleting the original leaves the copy and the
    // other thread as they were.
    inner.copy_thread("b", "c").await.unwrap();
    inner.delete_thread("b").await.unwrap();
    assert_eq!(
        reads_back_as_saved(inner, &saves, "b", "c", all).await,
        in_b
    );
    assert_eq!(
        reads_back_as_saved(inner, &saves, "a", "a", all).await,
        in_a
    );
    assert!(
        inner
            .get_tuple(&CheckpointConfig::thread("b"))
            .await
            .unwrap()
            .is_none()
    );

    // A prune gives back the dropped records' bytes; what it keeps reads the same.
    inner.prune("a", 3).await.unwrap();
    let kept = reads_back_as_saved(inner, &saves, "a", "a", 3).await;
    assert_eq!(kept, 3 * expected(&saves, "a").len());
    assert_eq!(inner.checkpoint_count(), kept + in_b);
}

/// Every field set, with values the runs above do not make: unversioned values kept
/// in the checkpoint, floats, nested objects, join progress, run metadata.
fn full_checkpoint(id: String, parent: Option<&str>) -> (Checkpoint, CheckpointMetadata) {
    let checkpoint = Checkpoint {
        v: 1,
        id,
        ts: now_rfc3339(),
        channel_values: BTreeMap::from([
            (
                "kept".to_string(),
                StoredValue::Full(json!({"f": 0.1, "neg": -3})),
            ),
            (
                "log".to_string(),
                StoredValue::Append(json!(["x", 1.5e300])),
            ),
            (
                "loose".to_string(),
                StoredValue::Append(json!([null, true])),
            ),
            ("n".to_string(), StoredValue::Full(json!(u64::MAX))),
        ]),
        channel_versions: BTreeMap::from([("log".into(), 4), ("n".into(), 9)]),
        versions_seen: BTreeMap::from([
            (
                "a".into(),
                BTreeMap::from([("log".into(), 3), ("n".into(), 8)]),
            ),
            ("b".into(), BTreeMap::new()),
        ]),
        updated_channels: vec!["n".into(), "log".into()],
        channel_bases: BTreeMap::from([("log".into(), 2)]),
        next: vec![
            PlannedTask {
                node: "a".into(),
                payload: None,
            },
            PlannedTask {
                node: "b".into(),
                payload: Some(json!({"item": [1, {"deep": "é"}]})),
            },
        ],
        barriers: BTreeMap::from([(0, vec!["a".into()]), (3, vec!["a".into(), "b".into()])]),
        schema_version: "schema-1".into(),
        graph_version: "graph-1".into(),
    };
    let mut metadata = CheckpointMetadata::new(CheckpointSource::Loop, -1);
    if let Some(parent) = parent {
        metadata.parents.insert(String::new(), parent.to_string());
        metadata.parents.insert("sub:1".into(), "other".into());
    }
    metadata.run_id = Some("run-1".into());
    metadata.steps = vec![StepRecord {
        step: 7,
        input_versions: BTreeMap::from([("n".into(), 8)]),
        tasks: vec![TaskRecord {
            id: "7:a".into(),
            node: "a".into(),
            duration_us: u64::MAX,
            wrote: true,
            resumed: false,
            cached: true,
            routed_to: vec!["b".into(), "__end__".into()],
        }],
    }];
    metadata
        .extra
        .insert("user".into(), json!({"k": [1, -2, 2.5]}));
    (checkpoint, metadata)
}

#[tokio::test]
async fn every_field_of_a_checkpoint_reads_back() {
    let saver = Recorded::new(Recording::default());
    let mut config = CheckpointConfig::thread("full");
    let mut parent = None;
    for _ in 0..3 {
        let (checkpoint, metadata) = full_checkpoint(new_checkpoint_id(), parent.as_deref());
        config = saver.put(&config, checkpoint, metadata).await.unwrap();
        parent = config.checkpoint_id.clone();
        saver
            .put_writes(
                &config,
                vec![
                    PendingWrite {
                        task_id: "t2".into(),
                        idx: 1,
                        channel: "update".into(),
                        value: json!({"n": 1}),
                    },
                    PendingWrite {
                        task_id: "t1".into(),
                        idx: 0,
                        channel: "update".into(),
                        value: json!(0.25),
                    },
                ],
            )
            .await
            .unwrap();
    }
    // The first write of a task is kept; a runtime record replaces the stored one.
    let twice = PendingWrite {
        task_id: "t1".into(),
        idx: 0,
        channel: "update".into(),
        value: json!("ignored"),
    };
    let error = PendingWrite {
        task_id: "t2".into(),
        idx: 1,
        channel: "__error__".into(),
        value: json!("boom"),
    };
    saver.put_writes(&config, vec![twice, error]).await.unwrap();
    let saves = saver.hook.0.lock().unwrap().clone();
    let read = reads_back_as_saved(&saver.inner, &saves, "full", "full", usize::MAX).await;
    assert_eq!(read, 3);
    let latest = saver.get_tuple(&config).await.unwrap().unwrap();
    assert_eq!(latest.pending_writes[1].channel, "__error__");
    assert_eq!(latest.pending_writes[0].value, json!(0.25));
}

/// A chat whose messages are long enough for the saver to share them by content
/// between a task's write, the appended value and the list's whole copies.
#[derive(GraphState, Clone, Debug, Default)]
struct Chat {
    turn: u32,
    #[reducer(append)]
    messages: Vec<String>,
}

/// Turn `n`'s message; every fifth turn repeats turn 0's text, so equal texts
/// arrive from different tasks too.
fn message(n: u32) -> String {
    let n = if n % 5 == 4 { 0 } else { n };
    format!("turn {n}: {}", "a long reply é ".repeat(20))
}

#[node]
fn reply(s: &Chat) -> ChatUpdate {
    Chat::update().turn(s.turn + 1).messages([message(s.turn)])
}

#[tokio::test]
async fn long_texts_read_back_through_every_path() {
    let saver = Arc::new(Recorded::new(Recording::default()));
    let graph = StateGraph::<Chat>::new()
        .add_node(reply)
        .add_edge(START, reply)
        .add_conditional_edges(
            reply,
            |s: &Chat| {
                if s.turn < 20 {
                    Route::to(reply)
                } else {
                    Route::end()
                }
            },
            (reply, END),
        )
        .compile_with(CompileOptions::new().shared_checkpointer(saver.clone()))
        .unwrap();
    let want: Vec<String> = (0..20).map(message).collect();
    for (thread, durability) in [("async", Durability::Async), ("sync", Durability::Sync)] {
        let config = RunConfig::new().thread(thread).durability(durability);
        let out = graph.invoke(Chat::update(), &config).await.unwrap();
        assert_eq!(out.values.messages, want);
        let state = graph.get_state(&config).await.unwrap().unwrap();
        assert_eq!(state.values.messages, want, "restored from the saver");
    }
    // A long error record replacing an earlier one.
    let latest = saver
        .get_tuple(&CheckpointConfig::thread("sync"))
        .await
        .unwrap()
        .unwrap()
        .config;
    for text in [message(1), message(2)] {
        let error = PendingWrite {
            task_id: "failed".into(),
            idx: 0,
            channel: "__error__".into(),
            value: json!(text),
        };
        saver.put_writes(&latest, vec![error]).await.unwrap();
    }

    let saves = saver.hook.0.lock().unwrap().clone();
    let inner = &saver.inner;
    for thread in ["async", "sync"] {
        assert_eq!(
            reads_back_as_saved(inner, &saves, thread, thread, usize::MAX).await,
            21
        );
        // Every stored version of the list reads back as it was saved, appended
        // items and whole copies alike.
        let saved: BTreeMap<u64, StoredValue> = saves
            .iter()
            .filter_map(|op| match op {
                SaveOp::Checkpoint {
                    config, checkpoint, ..
                } if config.thread_id == thread => Some(checkpoint),
                _ => None,
            })
            .filter_map(|c| {
                let version = *c.channel_versions.get("messages")?;
                Some((version, c.channel_values.get("messages")?.clone()))
            })
            .collect();
        assert!(saved.values().any(|v| matches!(v, StoredValue::Full(_))));
        assert!(saved.values().any(|v| matches!(v, StoredValue::Append(_))));
        let history = inner
            .channel_history(&CheckpointConfig::thread(thread), "messages", 0, u64::MAX)
            .await
            .unwrap();
        assert_eq!(history, saved.into_iter().collect::<Vec<_>>());
    }
    let tuple = inner
        .get_tuple(&CheckpointConfig::thread("sync"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(tuple.pending_writes[0].value, json!(message(2)));

    // After a prune drops most of a thread, and after a copy, what is kept reads the
    // same.
    inner.prune("async", 2).await.unwrap();
    inner.copy_thread("sync", "copy").await.unwrap();
    inner.delete_thread("sync").await.unwrap();
    assert_eq!(
        reads_back_as_saved(inner, &saves, "async", "async", 2).await,
        2
    );
    assert_eq!(
        reads_back_as_saved(inner, &saves, "sync", "copy", usize::MAX).await,
        21
    );
    for thread in ["async", "copy"] {
        let state = graph
            .get_state(&RunConfig::new().thread(thread))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(state.values.messages, want, "thread {thread}");
    }
}
