//! The crash drill of subgraphs: a worker running the subgraph chain
//! ([`crate::nested`]) is killed with SIGKILL at random moments — nearly all inside a
//! running child — and each time a new worker continues the thread. The resumed run
//! continues each child from its checkpoint in its namespace: only unfinished child
//! tasks run again, and the run ends in the uninterrupted run's state.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use stategraph::checkpoint::{CheckpointConfig, CheckpointSaver, InMemorySaver, ListOptions};
use stategraph::prelude::*;

use crate::crash::read_log;
use crate::nested::{self, CHILD_WIDTH, Pipeline};
use crate::workloads::{Store, TASK_LOG_VAR};

/// What a subgraph drill saw, for the caller to report.
#[derive(Debug)]
pub struct NestedDrill {
    /// Kills that landed while the worker was running.
    pub kills: usize,
    /// Kills after which some child had checkpoints but had not finished: the kill
    /// landed inside a running child.
    pub kills_inside_children: usize,
    /// Kills after which some child had saved writes of tasks of a step it had not
    /// finished (so the resumed child ran only the others of that step).
    pub kills_with_saved_child_writes: usize,
    /// Child tasks that ran more than once (each time, killed before its writes
    /// were saved).
    pub child_tasks_rerun: usize,
    /// Child task runs in all, over all workers.
    pub child_task_runs: usize,
}

/// What the store holds of the thread's children after a kill.
struct Seen {
    /// Log keys (see [`nested::write_key`]) of every task with saved writes, in any
    /// namespace, in any checkpoint.
    saved: BTreeSet<String>,
    /// Some child has checkpoints but has not finished.
    inside_child: bool,
    /// Some child's latest checkpoint has saved writes of its next step.
    child_step_half_done: bool,
    /// The namespaces.
    namespaces: Vec<String>,
}

async fn seen(saver: &dyn CheckpointSaver, thread: &str) -> Seen {
    let mut out = Seen {
        saved: BTreeSet::new(),
        inside_child: false,
        child_step_half_done: false,
        namespaces: Vec::new(),
    };
    let namespaces = saver
        .list_namespaces(thread)
        .await
        .expect("list the thread's namespaces");
    for ns in namespaces {
        let mut config = CheckpointConfig::thread(thread);
        config.checkpoint_ns = ns.clone();
        let history = saver
            .list(&config, &ListOptions::new())
            .await
            .expect("read a namespace's history");
        // One read: on PostgreSQL the killed worker's last commit may still land
        // while the drill reads (so it never compares two reads).
        let latest = history
            .first()
            .expect("a listed namespace has a checkpoint");
        for tuple in &history {
            for w in tuple
                .pending_writes
                .iter()
                .filter(|w| !w.is_runtime_record())
            {
                out.saved.insert(nested::write_key(&ns, &w.task_id));
            }
        }
        if !ns.is_empty() {
            let unfinished = !latest.checkpoint.next.is_empty();
            out.inside_child |= unfinished;
            out.child_step_half_done |=
                unfinished && latest.pending_writes.iter().any(|w| !w.is_runtime_record());
        }
        out.namespaces.push(ns);
    }
    out
}

/// Runs the drill: `kills` SIGKILLs of `worker` (the `saver_worker` binary) running
/// the subgraph chain of `stages` stages, each child `rounds` rounds, on a fresh
/// thread of `store`, each after a random delay (seeded by `seed`), then a last
/// worker that finishes. Panics when any guarantee fails:
/// - the finished state equals an uninterrupted run's, and every child finished;
/// - a task (child or parent) whose writes were saved in its namespace before a kill
///   never runs again after it;
/// - every child task ran and has saved writes, and it ran again only across a kill.
pub fn run(
    worker: &Path,
    store: &Store,
    dir: &Path,
    stages: u64,
    rounds: u64,
    kills: usize,
    seed: u64,
) -> NestedDrill {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let thread = format!("nested-{}", stategraph::checkpoint::new_checkpoint_id());
    let log = dir.join(format!("{thread}.log"));
    let config = RunConfig::new().thread(thread.as_str());
    let input = || Pipeline::update().rounds(rounds);

    // The uninterrupted run, in this process.
    let expected = runtime
        .block_on(
            nested::pipeline_graph(Arc::new(InMemorySaver::new()), stages).invoke(input(), &config),
        )
        .expect("the uninterrupted run")
        .values;
    assert_eq!(
        expected.done.len() as u64,
        stages * rounds * CHILD_WIDTH,
        "{expected:?}"
    );

    let saver = runtime.block_on(store.open()).expect("open the saver");
    let graph = nested::pipeline_graph(saver.clone(), stages);
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    // Per kill: the log length then, and the tasks whose writes were saved.
    let mut saved_before: Vec<(usize, BTreeSet<String>)> = Vec::new();
    let mut inside_children = 0;
    let mut half_done = 0;

    let spawn = || {
        Command::new(worker)
            .args([
                "nested",
                &store.arg(),
                &thread,
                &stages.to_string(),
                &rounds.to_string(),
            ])
            .env(TASK_LOG_VAR, &log)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start a worker")
    };

    let log_size = || std::fs::metadata(&log).map_or(0, |m| m.len());
    while saved_before.len() < kills {
        let size = log_size();
        let mut child = spawn();
        let mut lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        let first = lines.next().and_then(Result::ok);
        assert_eq!(first.as_deref(), Some("ready"), "the worker did not start");
        // Each kill lands while the worker runs tasks: after it logs its first (on
        // PostgreSQL it may first wait for the killed worker's session to end and
        // release the thread's lock).
        let started = std::time::Instant::now();
        while log_size() == size && started.elapsed() < Duration::from_secs(20) {
            if child.try_wait().expect("poll the worker").is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(rng.random_range(2..40)));
        if let Some(status) = child.try_wait().expect("poll the worker") {
            let said: Vec<String> = lines.map_while(Result::ok).collect();
            panic!(
                "the worker ended ({status}, saying {said:?}) before kill {} of {kills}: give the graph more stages or rounds",
                saved_before.len() + 1
            );
        }
        child.kill().expect("SIGKILL the worker");
        child.wait().expect("reap the worker");

        let after = runtime.block_on(seen(&*saver, &thread));
        inside_children += usize::from(after.inside_child);
        half_done += usize::from(after.child_step_half_done);
        let logged = read_log(&log);
        for key in &after.saved {
            assert!(
                logged.contains(key),
                "task {key} has saved writes but never logged running (log: {} lines)",
                logged.len()
            );
        }
        saved_before.push((logged.len(), after.saved));
    }

    // The last worker finishes the thread.
    crate::crash::finish(spawn(), &runtime, &graph, &config, &expected);

    let end = runtime.block_on(seen(&*saver, &thread));
    let children: Vec<&String> = end.namespaces.iter().filter(|ns| !ns.is_empty()).collect();
    assert_eq!(
        children.len() as u64,
        stages,
        "one child namespace per stage: {children:?}"
    );
    for ns in children {
        let mut child = CheckpointConfig::thread(thread.as_str());
        child.checkpoint_ns = ns.clone();
        let latest = runtime
            .block_on(saver.get_tuple(&child))
            .expect("read a child's latest checkpoint")
            .expect("the child has checkpoints");
        assert!(
            latest.checkpoint.next.is_empty(),
            "the child in `{ns}` finished"
        );
    }

    let logged = read_log(&log);
    for (kill, (len, saved)) in saved_before.iter().enumerate() {
        if let Some(again) = logged[*len..].iter().find(|key| saved.contains(*key)) {
            panic!("task {again} ran again after kill {kill}, though its writes were saved");
        }
    }
    // Every child task ran, and ran to saved writes: per stage, `rounds + 1` plans and
    // `rounds * CHILD_WIDTH` work tasks.
    let mut runs: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (at, key) in logged
        .iter()
        .enumerate()
        .filter(|(_, k)| !k.starts_with('|'))
    {
        runs.entry(key.as_str()).or_default().push(at);
    }
    let kills_at: Vec<usize> = saved_before.iter().map(|(len, _)| *len).collect();
    for (key, at) in &runs {
        for pair in at.windows(2) {
            assert!(
                kills_at.iter().any(|k| pair[0] < *k && *k <= pair[1]),
                "task {key} ran twice (log lines {} and {}) with no kill between",
                pair[0],
                pair[1]
            );
        }
    }
    let per_stage = (rounds + 1 + rounds * CHILD_WIDTH) as usize;
    assert_eq!(runs.len(), stages as usize * per_stage, "{runs:?}");
    let unsaved: Vec<&&str> = runs.keys().filter(|k| !end.saved.contains(**k)).collect();
    assert!(
        unsaved.is_empty(),
        "child tasks without saved writes: {unsaved:?}"
    );
    NestedDrill {
        kills: saved_before.len(),
        kills_inside_children: inside_children,
        kills_with_saved_child_writes: half_done,
        child_tasks_rerun: runs.values().filter(|at| at.len() > 1).count(),
        child_task_runs: runs.values().map(Vec::len).sum(),
    }
}
