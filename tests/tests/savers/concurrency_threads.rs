//! One writer per thread across processes, on SQLite and PostgreSQL: two worker
//! processes running the same thread take turns (the history is one chain and each
//! run's entries are contiguous), and a worker that may not wait long enough fails
//! with `ThreadBusy` without touching the thread.
//!
//! The PostgreSQL cases need a server: set `STATEGRAPH_POSTGRES_URL`.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use stategraph::checkpoint::{CheckpointConfig, CheckpointSaver, ListOptions};
use stategraph::prelude::*;
use stategraph_tests::servers;
use stategraph_tests::workloads::{self, Store};

const WORKER: &str = env!("CARGO_BIN_EXE_saver_worker");

/// A worker and a reader collecting its stdout lines with when they arrived.
struct Worker {
    child: Child,
    lines: JoinHandle<Vec<(Instant, String)>>,
}

fn journal_worker(
    store: &Store,
    writer: &str,
    goal: u32,
    timeout: Duration,
    threads: &[String],
) -> Worker {
    let mut child = Command::new(WORKER)
        .args([
            "journal",
            &store.arg(),
            writer,
            &goal.to_string(),
            &timeout.as_millis().to_string(),
            "8",
            &threads.join(","),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let lines = std::thread::spawn(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .map(|line| (Instant::now(), line))
            .collect()
    });
    Worker { child, lines }
}

/// Waits for the worker; its exit code, stdout lines and stderr.
fn finish(worker: Worker) -> (Option<i32>, Vec<(Instant, String)>, String) {
    let output = worker.child.wait_with_output().unwrap();
    let lines = worker.lines.join().unwrap();
    (
        output.status.code(),
        lines,
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn when(lines: &[(Instant, String)], what: &str) -> Instant {
    lines
        .iter()
        .find(|(_, l)| l.starts_with(what))
        .map(|(t, _)| *t)
        .unwrap_or_else(|| panic!("no `{what}` in {lines:?}"))
}

async fn journal_of(saver: &Arc<dyn CheckpointSaver>, thread: &str, goal: u32) -> Vec<String> {
    let mut history = saver
        .list(&CheckpointConfig::thread(thread), &ListOptions::new())
        .await
        .unwrap();
    history.reverse();
    let state = workloads::journal_graph(saver.clone())
        .get_state(&RunConfig::new().thread(thread))
        .await
        .unwrap()
        .unwrap();
    workloads::check_journal(&history, &state.values.entries, goal)
}

async fn two_workers_take_turns(store: Store) {
    let saver = store.open().await.unwrap();
    let thread = vec![format!(
        "turns-{}",
        stategraph::checkpoint::new_checkpoint_id()
    )];
    let long = Duration::from_secs(60);
    // Runs long enough (at least 200 ms of node time) that the second process is up
    // while the first still runs, even on a loaded machine.
    let a = journal_worker(&store, "a", 100, long, &thread);
    let b = journal_worker(&store, "b", 100, long, &thread);
    let (a, b) = (finish(a), finish(b));
    assert_eq!(a.0, Some(0), "{}", a.2);
    assert_eq!(b.0, Some(0), "{}", b.2);
    // Both had started before either was done: one of them waited for the other.
    let first_done = when(&a.1, "done").min(when(&b.1, "done"));
    assert!(when(&a.1, "started") < first_done && when(&b.1, "started") < first_done);

    let mut writers = journal_of(&saver, &thread[0], 100).await;
    writers.sort();
    assert_eq!(writers, ["a", "b"], "both runs, whole, one after the other");
}

async fn an_impatient_worker_gets_thread_busy(store: Store) {
    let saver = store.open().await.unwrap();
    let thread = vec![format!(
        "busy-{}",
        stategraph::checkpoint::new_checkpoint_id()
    )];
    // At least 800 ms of node time: still running when the impatient worker gives up.
    let holder = journal_worker(&store, "holder", 400, Duration::from_secs(60), &thread);
    // Wait until the holder is running: its first checkpoint is saved.
    let started = Instant::now();
    while saver
        .get_tuple(&CheckpointConfig::thread(&thread[0]))
        .await
        .unwrap()
        .is_none()
    {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the holder never started"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let asked = Instant::now();
    let impatient = journal_worker(&store, "impatient", 5, Duration::from_millis(200), &thread);
    let (code, lines, stderr) = finish(impatient);
    assert_eq!(code, Some(3), "ThreadBusy exit: {lines:?} {stderr}");
    assert!(asked.elapsed() >= Duration::from_millis(200));
    assert!(stderr.contains("is busy"), "{stderr}");
    assert!(stderr.contains(&thread[0]), "{stderr}");
    assert!(stderr.contains("RunConfig::lock_timeout"), "{stderr}");

    let (code, _, stderr) = finish(holder);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        journal_of(&saver, &thread[0], 400).await,
        ["holder"],
        "the impatient worker wrote nothing"
    );
}

#[tokio::test]
async fn sqlite_two_workers_on_one_thread_take_turns() {
    let dir = tempfile::tempdir().unwrap();
    two_workers_take_turns(Store::Sqlite(dir.path().join("turns.db"))).await;
}

#[tokio::test]
async fn sqlite_a_worker_that_cannot_wait_gets_thread_busy() {
    let dir = tempfile::tempdir().unwrap();
    an_impatient_worker_gets_thread_busy(Store::Sqlite(dir.path().join("busy.db"))).await;
}

fn postgres_store() -> Option<Store> {
    let url = servers::postgres_url(module_path!())?;
    Some(Store::Postgres {
        url,
        schema: servers::fresh_schema("concurrency"),
    })
}

fn cleanup(store: &Store) {
    if let Store::Postgres { url, schema } = store {
        let (url, schema) = (url.clone(), schema.clone());
        // Synchronous client code may not run on the test's runtime thread.
        std::thread::spawn(move || servers::drop_schema(&url, &schema))
            .join()
            .unwrap();
    }
}

#[tokio::test]
async fn postgres_two_workers_on_one_thread_take_turns() {
    let Some(store) = postgres_store() else {
        return;
    };
    two_workers_take_turns(store.clone()).await;
    cleanup(&store);
}

#[tokio::test]
async fn postgres_a_worker_that_cannot_wait_gets_thread_busy() {
    let Some(store) = postgres_store() else {
        return;
    };
    an_impatient_worker_gets_thread_busy(store.clone()).await;
    cleanup(&store);
}
