//! A resume value of the wrong type never poisons a thread.
//!
//! - Where the resuming process knows the answer type (a node of it asked for that
//!   type), the value is refused before anything is saved:
//!   `RunError::InvalidResume`, the thread untouched.
//! - Otherwise (a fresh process resuming), the node finds the bad answer when it
//!   runs: the run fails with `InvalidResume`, the same interrupt is pending again,
//!   and the next resume replaces the refused answer instead of queueing after it.

use std::process::Command as Process;

use serde_json::json;
use std::sync::Arc;

use stategraph::checkpoint::{CheckpointConfig, CheckpointSaver};
use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Refund {
    amount: u32,
    approved_by: Option<String>,
    #[reducer(append)]
    notes: Vec<String>,
}

#[node]
fn approve(r: &Refund, ctx: &NodeContext) -> Result<RefundUpdate, NodeError> {
    let who: String = ctx.interrupt(json!({ "approve refund of": r.amount }))?;
    Ok(Refund::update().approved_by(Some(who)))
}

#[node]
fn count(_: &Refund, ctx: &NodeContext) -> Result<RefundUpdate, NodeError> {
    let n: u32 = ctx.interrupt("how many?")?;
    Ok(Refund::update().notes([format!("counted {n}")]))
}

fn graph(saver: Arc<dyn CheckpointSaver>) -> CompiledGraph<Refund> {
    StateGraph::<Refund>::new()
        .add_node(approve)
        .add_node(count)
        .add_edge(START, approve)
        .add_edge(START, count)
        .compile_with(CompileOptions::new().shared_checkpointer(saver))
        .unwrap()
}

#[tokio::test]
async fn a_mistyped_answer_is_refused_before_anything_is_saved() {
    let saver: Arc<dyn CheckpointSaver> = Arc::new(InMemorySaver::new());
    let g = graph(saver.clone());
    let thread = RunConfig::new().thread("refund-1");
    let paused = g
        .invoke(Refund::update().amount(120u32), &thread)
        .await
        .unwrap();
    assert_eq!(paused.interrupts.len(), 2);
    let by_node = |node: &str| {
        paused
            .interrupts
            .iter()
            .find(|i| i.node == node)
            .map(|i| i.id.clone())
            .unwrap()
    };
    let (approval, counting) = (by_node("approve"), by_node("count"));
    let before = saver
        .get_tuple(&CheckpointConfig::thread("refund-1"))
        .await
        .unwrap()
        .unwrap();

    // `approve` decodes a String: 42 is refused, naming the interrupt and the type.
    let err = g
        .invoke(
            Command::resume_map([(approval.clone(), json!(42)), (counting.clone(), json!(3))]),
            &thread,
        )
        .await
        .unwrap_err();
    match &err {
        RunError::InvalidResume {
            interrupt,
            node,
            expected,
            ..
        } => {
            assert_eq!(interrupt, &approval);
            assert_eq!(node, "approve");
            assert_eq!(expected, "alloc::string::String");
        }
        other => panic!("expected a refused answer, got {other:?}"),
    }
    assert!(err.to_string().contains("still pending"), "{err}");

    // Nothing was saved: same checkpoint, same pending writes, both still waiting.
    let after = saver
        .get_tuple(&CheckpointConfig::thread("refund-1"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(after.checkpoint.id, before.checkpoint.id);
    assert_eq!(after.pending_writes, before.pending_writes);
    let state = g.get_state(&thread).await.unwrap().unwrap();
    assert_eq!(state.interrupts.len(), 2);

    // `count` decodes a u32: a string is refused too.
    let err = g
        .invoke(
            Command::resume_map([(counting.clone(), json!("three"))]),
            &thread,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, RunError::InvalidResume { node, expected, .. } if node == "count" && expected == "u32"),
        "{err:?}"
    );

    // Correct answers go through.
    let done = g
        .invoke(
            Command::resume_map([(approval, json!("grace")), (counting, json!(3))]),
            &thread,
        )
        .await
        .unwrap();
    assert!(done.interrupts.is_empty());
    assert_eq!(done.values.approved_by.as_deref(), Some("grace"));
    assert_eq!(done.values.notes, ["counted 3"]);
}

const WORKER: &str = env!("CARGO_BIN_EXE_resume_worker");

fn worker(db: &std::path::Path, args: &[&str]) -> (i32, String) {
    let out = Process::new(WORKER)
        .arg(db)
        .args(args)
        .output()
        .expect("the worker starts");
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.code().unwrap_or(-1), text)
}

/// Each step is its own process: the resuming process never ran `approve`, so the
/// node itself refuses the answer. Before, the answer 42 was stored, the run failed
/// with a node error, and every later correct resume failed with the same error
/// about 42.
#[test]
fn a_fresh_process_refuses_a_mistyped_answer_and_the_next_resume_replaces_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("refunds.sqlite");

    assert_eq!(worker(&db, &["start"]), (0, "paused".to_string()));

    let (code, text) = worker(&db, &["resume", "42"]);
    assert_eq!(code, 4, "{text}");
    assert!(
        text.starts_with("refused: resume value for interrupt")
            && text.contains("`approve` does not decode as `alloc::string::String`")
            && text.contains("still pending"),
        "{text}"
    );

    // Refused again, from yet another process: still the same pending interrupt.
    let (code, text) = worker(&db, &["resume", "[1, 2]"]);
    assert_eq!(code, 4, "{text}");

    let (code, text) = worker(&db, &["resume", "\"grace\""]);
    assert_eq!((code, text.as_str()), (0, "approved by grace"));
}
