//! A saved pending write the graph cannot use — an unknown kind of write, an update
//! of a channel the state does not have, a malformed destination — fails the
//! continue with `CheckpointError::InvalidWrite` naming the thread, checkpoint, task
//! and channel. It is never skipped: a skipped write is a task's output silently lost.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::json;
use stategraph::checkpoint::{CheckpointConfig, CheckpointError, CheckpointSaver, PendingWrite};
use stategraph::prelude::*;
use stategraph_sqlite::SqliteSaver;

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Report {
    #[reducer(append)]
    findings: Vec<String>,
}

/// `research` finishes (its writes are saved); `review` fails while the flag is set.
fn graph(saver: Arc<dyn CheckpointSaver>, review_fails: Arc<AtomicBool>) -> CompiledGraph<Report> {
    let mut g = StateGraph::<Report>::new();
    let research = g.add_node_fn("research", |_: &Report| {
        Report::update().findings(["the key finding"])
    });
    let review = g.add_node_fn("review", move |_: &Report| {
        if review_fails.load(Ordering::SeqCst) {
            Err(NodeError::msg("reviewer unavailable"))
        } else {
            Ok(Report::update().findings(["reviewed"]))
        }
    });
    g.add_edge(START, research).add_edge(START, review);
    g.compile_with(CompileOptions::new().shared_checkpointer(saver))
        .expect("the graph compiles")
}

/// Runs until `review` fails; returns the graph, the checkpoint the saved writes
/// belong to and `research`'s task id.
async fn failed_run(
    saver: Arc<dyn CheckpointSaver>,
    thread: &RunConfig,
) -> (CompiledGraph<Report>, Arc<AtomicBool>, String, String) {
    let fails = Arc::new(AtomicBool::new(true));
    let g = graph(saver, fails.clone());
    let err = g.invoke(Report::update(), thread).await.unwrap_err();
    assert!(matches!(err, RunError::Node { .. }), "{err:?}");
    let state = g.get_state(thread).await.unwrap().unwrap();
    assert_eq!(state.values.findings, ["the key finding"]);
    let checkpoint = state.config.checkpoint_id.clone().unwrap();
    let task = state
        .tasks
        .iter()
        .find(|t| t.node == "research")
        .map(|t| t.id.clone())
        .unwrap();
    fails.store(false, Ordering::SeqCst);
    (g, fails, checkpoint, task)
}

fn assert_invalid_write(err: &RunError, checkpoint: &str, task: &str, channel: &str) {
    match err {
        RunError::Checkpoint(CheckpointError::InvalidWrite {
            thread,
            checkpoint: c,
            task: t,
            channel: ch,
            ..
        }) => {
            assert_eq!(thread, "report");
            assert_eq!(c, checkpoint);
            assert_eq!(t, task);
            assert_eq!(ch, channel);
            let text = err.to_string();
            assert!(
                text.contains("thread `report`") && text.contains(task),
                "{text}"
            );
        }
        other => panic!("expected an unusable saved write, got {other:?}"),
    }
}

/// Adds a write to `research`'s saved output through the saver's own API.
async fn add_write(
    saver: &dyn CheckpointSaver,
    checkpoint: &str,
    task: &str,
    channel: &str,
    value: serde_json::Value,
) {
    let at = CheckpointConfig::thread("report").at(checkpoint);
    let write = PendingWrite {
        task_id: task.to_string(),
        idx: 7,
        channel: channel.to_string(),
        value,
    };
    saver.put_writes(&at, vec![write]).await.unwrap();
}

async fn every_damage(saver: impl Fn() -> Arc<dyn CheckpointSaver>) {
    let thread = RunConfig::new().thread("report");
    let cases = [
        ("findingz", json!(["a finding that would vanish"])),
        ("update", json!({ "findingz": { "reduce": ["x"] } })),
        ("goto", json!(42)),
        ("send", json!({ "payload": 1 })),
    ];
    for (channel, value) in cases {
        let saver = saver();
        let (g, _fails, checkpoint, task) = failed_run(saver.clone(), &thread).await;
        add_write(&*saver, &checkpoint, &task, channel, value).await;
        let err = g.invoke(None, &thread).await.unwrap_err();
        assert_invalid_write(&err, &checkpoint, &task, channel);
        // Nothing was committed on top of the damaged step.
        let state = g
            .get_state(&thread.clone().checkpoint(&checkpoint))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            state.config.checkpoint_id.as_deref(),
            Some(checkpoint.as_str())
        );
        let latest = saver
            .get_tuple(&CheckpointConfig::thread("report"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(latest.checkpoint.id, checkpoint, "{channel}");
    }
}

#[tokio::test]
async fn in_memory_saver() {
    every_damage(|| Arc::new(InMemorySaver::new())).await;
}

#[tokio::test]
async fn sqlite_saver_through_its_api() {
    let dir = tempfile::tempdir().unwrap();
    let n = std::sync::atomic::AtomicUsize::new(0);
    every_damage(|| {
        let file = dir
            .path()
            .join(format!("r{}.sqlite", n.fetch_add(1, Ordering::SeqCst)));
        Arc::new(SqliteSaver::open(file).unwrap())
    })
    .await;
}

/// The reported case: a row's write kind edited in the database file. Before, the
/// finding vanished from the result and the run ended normally.
#[tokio::test]
async fn sqlite_row_with_an_edited_write_kind() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("report.sqlite");
    let saver: Arc<dyn CheckpointSaver> = Arc::new(SqliteSaver::open(&file).unwrap());
    let thread = RunConfig::new().thread("report");
    let (g, _fails, checkpoint, task) = failed_run(saver, &thread).await;

    let db = rusqlite::Connection::open(&file).unwrap();
    let edited = db
        .execute(
            "UPDATE stategraph_writes SET channel = 'findings' WHERE task_id = ?1 AND channel = 'update'",
            [&task],
        )
        .unwrap();
    assert_eq!(edited, 1);
    drop(db);

    let err = g.invoke(None, &thread).await.unwrap_err();
    assert_invalid_write(&err, &checkpoint, &task, "findings");
}
