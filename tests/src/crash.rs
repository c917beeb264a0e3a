//! The crash-safety drills shared by the SQLite and PostgreSQL crash tests: a worker
//! process runs the long fan-out graph and is killed with SIGKILL at random moments;
//! after each kill a new worker continues the thread. And workers killed while they
//! open the store, creating or upgrading its tables.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use stategraph::checkpoint::{CheckpointConfig, InMemorySaver, ListOptions};
use stategraph::prelude::*;

use crate::workloads::{self, Store, TASK_LOG_VAR};

/// What a drill saw, for the caller to report.
#[derive(Debug)]
pub struct Drill {
    /// Kills that landed while the worker was running.
    pub kills: usize,
    /// Kills after which the latest checkpoint had saved writes of unfinished steps.
    pub kills_with_saved_writes: usize,
    /// Supersteps of the finished thread.
    pub steps: i64,
}

/// The task log's lines.
pub(crate) fn read_log(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Runs the last worker (`last`) to the end and checks the thread finished in the
/// state of an uninterrupted run, `expected`.
pub(crate) fn finish<S: GraphState + PartialEq + std::fmt::Debug>(
    last: std::process::Child,
    runtime: &tokio::runtime::Runtime,
    graph: &CompiledGraph<S>,
    config: &RunConfig,
    expected: &S,
) {
    let status = last.wait_with_output().expect("run the last worker");
    assert!(
        status.status.success(),
        "the last worker failed: {status:?}"
    );
    assert!(
        String::from_utf8_lossy(&status.stdout).contains("finished"),
        "{status:?}"
    );
    let snapshot = runtime
        .block_on(graph.get_state(config))
        .expect("read the finished thread")
        .expect("the thread exists");
    assert!(
        snapshot.tasks.is_empty(),
        "the thread finished: {:?}",
        snapshot.tasks
    );
    assert_eq!(
        &snapshot.values, expected,
        "the state after kills equals an uninterrupted run's"
    );
}

/// Runs the drill: `kills` SIGKILLs of `worker` (the `saver_worker` binary) running
/// `rounds` rounds of the long graph on a fresh thread of `store`, each after a random
/// delay (seeded by `seed`), then a last worker that finishes. Panics when any
/// guarantee fails:
/// - the finished state equals an uninterrupted run's;
/// - every checkpoint seen after a kill is still in the final history, which is one
///   unbroken chain of consecutive steps;
/// - a task whose writes were saved before a kill never runs again after it.
pub fn run(
    worker: &Path,
    store: &Store,
    dir: &Path,
    rounds: u64,
    kills: usize,
    seed: u64,
) -> Drill {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let thread = format!("crash-{}", stategraph::checkpoint::new_checkpoint_id());
    let log = dir.join(format!("{thread}.log"));
    let config = RunConfig::new().thread(thread.as_str());

    // The uninterrupted run, in this process.
    let expected = runtime
        .block_on(
            workloads::long_graph(Arc::new(InMemorySaver::new()))
                .invoke(workloads::Long::update().rounds(rounds), &config),
        )
        .expect("the uninterrupted run")
        .values;
    assert_eq!(expected.done.len() as u64, rounds * workloads::WIDTH);

    let saver = runtime.block_on(store.open()).expect("open the saver");
    let graph = workloads::long_graph(saver.clone());
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut seen_ids = BTreeSet::new();
    // Per kill: the log length then, and the tasks whose writes were saved.
    let mut saved_before: Vec<(usize, BTreeSet<String>)> = Vec::new();

    let spawn = || {
        Command::new(worker)
            .args(["long", &store.arg(), &thread, &rounds.to_string()])
            .env(TASK_LOG_VAR, &log)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start a worker")
    };

    while saved_before.len() < kills {
        let mut child = spawn();
        let mut lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        let first = lines.next().and_then(Result::ok);
        assert_eq!(first.as_deref(), Some("ready"), "the worker did not start");
        // Kill a worker that is stepping, not one still connecting: on a loaded
        // machine start-up alone can outlast the random delay.
        let before = read_log(&log).len();
        let started = std::time::Instant::now();
        while read_log(&log).len() == before && started.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(2));
        }
        std::thread::sleep(Duration::from_millis(rng.random_range(2..50)));
        if let Some(status) = child.try_wait().expect("poll the worker") {
            let said: Vec<String> = lines.map_while(Result::ok).collect();
            panic!(
                "the worker ended ({status}, saying {said:?}) before kill {} of {kills}: give the graph more rounds",
                saved_before.len() + 1
            );
        }
        child.kill().expect("SIGKILL the worker");
        child.wait().expect("reap the worker");

        let history = runtime
            .block_on(saver.list(&CheckpointConfig::thread(&thread), &ListOptions::new()))
            .expect("read the history after a kill");
        seen_ids.extend(
            history
                .iter()
                .filter_map(|t| t.config.checkpoint_id.clone()),
        );
        let saved: BTreeSet<String> = history
            .first()
            .map(|latest| {
                latest
                    .pending_writes
                    .iter()
                    .filter(|w| !w.is_runtime_record())
                    .map(|w| w.task_id.clone())
                    .collect()
            })
            .unwrap_or_default();
        let logged = read_log(&log);
        for id in &saved {
            assert!(
                logged.contains(id),
                "task {id} has saved writes but never logged running (log: {} lines)",
                logged.len()
            );
        }
        saved_before.push((logged.len(), saved));
    }

    // The last worker finishes the thread.
    finish(spawn(), &runtime, &graph, &config, &expected);

    let mut history = runtime
        .block_on(saver.list(&CheckpointConfig::thread(&thread), &ListOptions::new()))
        .expect("read the final history");
    history.reverse();
    let ids: BTreeSet<String> = history
        .iter()
        .filter_map(|t| t.config.checkpoint_id.clone())
        .collect();
    let lost: Vec<&String> = seen_ids.difference(&ids).collect();
    assert!(lost.is_empty(), "committed checkpoints lost: {lost:?}");
    for (i, pair) in history.windows(2).enumerate() {
        assert_eq!(
            pair[1].parent_config.as_ref(),
            Some(&pair[0].config),
            "checkpoint {} does not follow {}",
            i + 1,
            i
        );
        assert_eq!(
            pair[1].metadata.step,
            pair[0].metadata.step + 1,
            "steps are consecutive"
        );
    }
    let steps = history.last().map_or(0, |t| t.metadata.step);
    assert_eq!(history.first().map(|t| t.metadata.step), Some(-1));

    let logged = read_log(&log);
    for (kill, (len, saved)) in saved_before.iter().enumerate() {
        if let Some(again) = logged[*len..].iter().find(|id| saved.contains(*id)) {
            panic!("task {again} ran again after kill {kill}, though its writes were saved");
        }
    }
    Drill {
        kills: saved_before.len(),
        kills_with_saved_writes: saved_before.iter().filter(|(_, s)| !s.is_empty()).count(),
        steps,
    }
}

/// What [`kill_while_opening`] saw.
#[derive(Debug)]
pub struct OpenDrill {
    /// Workers killed.
    pub kills: usize,
    /// Kills that landed before the worker had opened the store (while it created or
    /// upgraded the tables, or before it began).
    pub before_opened: usize,
}

/// Kills `rounds` workers (the `saver_worker` binary) while they open `store`, each
/// at a random moment up to `latest` after it started (seeded by `seed`); `reset` runs before each, making the
/// store new or of older tables, so the kills land while the tables are created or
/// upgraded. After each kill the store must open in this process.
///
/// # Panics
/// When the store does not open after a kill.
pub fn kill_while_opening(
    worker: &Path,
    store: &Store,
    rounds: usize,
    latest: Duration,
    seed: u64,
    mut reset: impl FnMut(),
) -> OpenDrill {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut before_opened = 0;
    for round in 0..rounds {
        reset();
        let mut child = Command::new(worker)
            .args(["open", &store.arg()])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start a worker");
        let latest = u64::try_from(latest.as_micros()).unwrap_or(u64::MAX).max(1);
        std::thread::sleep(Duration::from_micros(rng.random_range(0..latest)));
        // Fails only when the worker already ended, which is fine.
        let _ = child.kill();
        let out = child.wait_with_output().expect("reap the worker");
        if !String::from_utf8_lossy(&out.stdout).contains("opened") {
            before_opened += 1;
        }
        if let Err(e) = runtime.block_on(store.open()) {
            panic!(
                "round {round}: the store does not open after a worker was killed opening it: {e}"
            );
        }
    }
    OpenDrill {
        kills: rounds,
        before_opened,
    }
}
