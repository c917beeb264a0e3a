//! The main demo as a user runs it: a real process on a real SQLite file, killed in
//! the middle of its fan-out and started again.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use stategraph::StateSnapshot;
use stategraph::checkpoint::{CheckpointSaver, ListOptions};
use stategraph::prelude::*;
use stategraph_examples::research::{self, Research};
use stategraph_sqlite::SqliteSaver;

const DEMO: &str = env!("CARGO_BIN_EXE_stategraph-demo");

fn demo(db: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(DEMO);
    cmd.arg("--db").arg(db).args(args).stdin(Stdio::null());
    cmd
}

fn run_to_end(db: &Path, args: &[&str]) -> String {
    let Output {
        status,
        stdout,
        stderr,
    } = demo(db, args).output().expect("the demo starts");
    let stdout = String::from_utf8(stdout).expect("utf-8 output");
    assert!(
        status.success(),
        "demo {args:?} failed: {status}\nstdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&stderr)
    );
    stdout
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime")
}

fn snapshot(db: &Path, thread: &str) -> Option<StateSnapshot<Research>> {
    let graph = research::build(SqliteSaver::open(db).expect("the file opens")).expect("builds");
    runtime()
        .block_on(graph.get_state(&RunConfig::new().thread(thread)))
        .expect("the thread reads")
}

fn history_len(db: &Path, thread: &str) -> usize {
    let graph = research::build(SqliteSaver::open(db).expect("the file opens")).expect("builds");
    runtime()
        .block_on(graph.get_state_history(&RunConfig::new().thread(thread), &ListOptions::new()))
        .expect("the history reads")
        .len()
}

fn count(output: &str, needle: &str) -> usize {
    output.lines().filter(|l| l.contains(needle)).count()
}

#[test]
fn a_killed_demo_continues_its_thread_and_ends_as_an_uninterrupted_run_does() {
    let dir = tempfile::tempdir().expect("a temp dir");

    // The reference: one uninterrupted run.
    let reference_db = dir.path().join("reference.sqlite");
    let out = run_to_end(&reference_db, &["--yes"]);
    assert!(out.contains("starting thread research-1"), "{out}");
    assert!(
        out.contains("thread research-1 finished: published"),
        "{out}"
    );
    let reference = snapshot(&reference_db, "research-1")
        .expect("the thread exists")
        .values;
    assert!(reference.report.is_some());
    assert_eq!(reference.findings.len(), 5, "4 questions and a follow-up");

    // Kill a second run once some, but not all, of the fan-out's research tasks have
    // saved their results.
    let db = dir.path().join("killed.sqlite");
    let mut child = demo(&db, &["--yes"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("the demo starts");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut lines = BufReader::new(stdout).lines();
    let mut seen = Vec::new();
    loop {
        let line = lines
            .next()
            .unwrap_or_else(|| panic!("the demo ended early:\n{}", seen.join("\n")))
            .expect("a line");
        let first_answer = line.contains("done, confidence");
        seen.push(line);
        if first_answer {
            break;
        }
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let saved = snapshot(&db, "research-1")
            .is_some_and(|s| s.tasks.iter().any(|t| t.node == "research" && t.has_writes));
        if saved {
            break;
        }
        assert!(Instant::now() < deadline, "no research result was saved");
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().expect("the demo is killed");
    child.wait().expect("the demo is reaped");
    drop(lines);

    let paused = snapshot(&db, "research-1").expect("the killed thread exists");
    assert_eq!(paused.metadata.step, 0, "the last checkpoint is plan's");
    assert_eq!(paused.tasks.len(), 4, "one research task per question");
    let saved = paused.tasks.iter().filter(|t| t.has_writes).count();
    assert!(
        (1..4).contains(&saved),
        "killed mid-step: {saved} of 4 saved"
    );
    assert_eq!(paused.next.len(), 4 - saved);
    assert!(paused.values.report.is_none());

    // Started again, it continues the same thread: plan does not run again, saved
    // research results are reused, only the missing ones run.
    let out = run_to_end(&db, &["--yes"]);
    assert!(
        out.contains("continuing thread research-1 from step 1"),
        "{out}"
    );
    assert!(!out.contains("starting thread"), "{out}");
    assert_eq!(count(&out, "▶ plan"), 0, "{out}");
    assert_eq!(count(&out, "step 1 ↺ research"), saved, "{out}");
    assert_eq!(count(&out, "step 1 ▶ research"), 4 - saved, "{out}");
    assert!(
        out.contains("thread research-1 finished: published"),
        "{out}"
    );
    let finished = snapshot(&db, "research-1").expect("the thread exists");
    assert!(finished.tasks.is_empty());
    assert_eq!(finished.values, reference);

    // A finished thread is left alone.
    let checkpoints = history_len(&db, "research-1");
    let out = run_to_end(&db, &["--yes"]);
    assert!(out.contains("thread research-1 already finished"), "{out}");
    assert_eq!(count(&out, "▶"), 0, "{out}");
    assert_eq!(history_len(&db, "research-1"), checkpoints);

    // `--fresh` starts the next thread, which ends the same way.
    let out = run_to_end(&db, &["--yes", "--fresh"]);
    assert!(out.contains("starting thread research-2"), "{out}");
    let second = snapshot(&db, "research-2").expect("the new thread exists");
    assert_eq!(second.values, reference);
    assert_eq!(history_len(&db, "research-1"), checkpoints);

    // The newest thread is found by listing, so deleting an older one changes nothing.
    let saver = SqliteSaver::open(&db).expect("the file opens");
    runtime()
        .block_on(saver.delete_thread("research-1"))
        .expect("deletes");
    let out = run_to_end(&db, &["--yes"]);
    assert!(out.contains("thread research-2 already finished"), "{out}");
    let out = run_to_end(&db, &["--yes", "--fresh", "--thread", "research-1"]);
    assert!(out.contains("starting thread research-1"), "{out}");
}

#[test]
fn the_demo_continues_a_thread_killed_while_waiting_for_approval() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let db = dir.path().join("approval.sqlite");
    let graph = research::build(SqliteSaver::open(&db).expect("opens")).expect("builds");
    let thread = RunConfig::new().thread("research-1");
    let paused = runtime()
        .block_on(graph.invoke(Research::update().topic(research::TOPIC), &thread))
        .expect("runs");
    assert_eq!(paused.interrupts.len(), 1);
    assert_eq!(paused.interrupts[0].node, "approve");
    drop(graph);

    let out = run_to_end(&db, &[]);
    assert!(
        out.contains("continuing thread research-1: it is waiting for approval"),
        "{out}"
    );
    assert!(out.contains("answered automatically"), "{out}");
    assert_eq!(count(&out, "▶ research"), 0, "{out}");
    assert!(
        out.contains("thread research-1 finished: published"),
        "{out}"
    );
}

#[test]
fn bad_options_are_refused_with_the_usage() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let db = dir.path().join("unused.sqlite");
    for (args, expected) in [
        (&["--bogus"][..], "unknown option `--bogus`"),
        (&["--thread"][..], "`--thread` needs a value"),
    ] {
        let out = demo(&db, args).output().expect("the demo starts");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(stderr.contains("usage: research_pipeline"), "{stderr}");
    }
    assert!(!db.exists(), "nothing was opened");

    let out = demo(&db, &["--fresh", "--thread", "t"])
        .output()
        .expect("the demo starts");
    assert!(out.status.success());
    let out = demo(&db, &["--fresh", "--thread", "t"])
        .output()
        .expect("the demo starts");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("thread `t` already exists"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
