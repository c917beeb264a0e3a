//! The pause drill: workers stopped with SIGSTOP for two to three leases while they
//! hold runs, then continued. Another worker takes their runs over meanwhile; the
//! stalled one, when it wakes, must neither save nor start anything of them.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use crate::tables::{Ended, Tables};
use crate::{Backend, Proc, Seeded, check_threads, queue_runs, spawn};

const LEASE: Duration = Duration::from_millis(800);
const STEP_MS: u64 = 200;
const RUNS_PER_THREAD: usize = 4;
const PAUSES_MID_RUN: usize = 10;
const SEED: u64 = 0x5EED_2026_0057_0900;

fn signal(p: &Proc, sig: &str) {
    let status = std::process::Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(p.pid().to_string())
        .status()
        .expect("kill(1)");
    assert!(status.success(), "kill -{sig} failed");
}

pub(crate) async fn drill(backend: Backend) -> String {
    let (processes, threads) = match backend {
        Backend::Postgres { .. } => (3, 48),
        Backend::Sqlite { .. } => (1, 8),
    };
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("a client");
    let mut procs: Vec<Proc> =
        futures::future::join_all((0..processes).map(|i| spawn(&backend, i, 0, LEASE))).await;
    let tables = Tables::open(&backend).await;
    let threads: Vec<String> = (0..threads).map(|t| format!("pause-{t}")).collect();
    queue_runs(&http, &procs, &threads, RUNS_PER_THREAD, STEP_MS).await;

    let mut rng = Seeded(SEED);
    let (mut pauses, mut mid_run) = (0usize, 0usize);
    while mid_run < PAUSES_MID_RUN {
        assert!(
            pauses < 4 * PAUSES_MID_RUN,
            "{pauses} pauses caught only {mid_run} workers in the middle of runs"
        );
        let victim = usize::try_from(rng.next() % processes as u64).unwrap_or(0);
        let prefix = format!("{}/", procs[victim].name);
        let waiting = Instant::now();
        loop {
            let (held, left) = tables.active(&prefix).await;
            assert!(
                left > 0,
                "the runs all ended after {pauses} pauses ({mid_run} mid-run): the drill needs more runs"
            );
            if held > 0 || waiting.elapsed() > Duration::from_secs(3) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // Somewhere inside a step.
        tokio::time::sleep(Duration::from_millis(rng.next() % STEP_MS)).await;
        signal(&procs[victim], "STOP");
        let (held, _) = tables.active(&prefix).await;
        // Two to three leases.
        let pause = 2 * LEASE + Duration::from_millis(rng.next() % LEASE.as_millis() as u64);
        tokio::time::sleep(pause).await;
        signal(&procs[victim], "CONT");
        pauses += 1;
        if held > 0 {
            mid_run += 1;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let waiting = Instant::now();
    loop {
        let (_, left) = tables.active("").await;
        if left == 0 {
            break;
        }
        assert!(
            waiting.elapsed() < Duration::from_secs(120),
            "{left} runs still pending or running two minutes after the last pause"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let runs = tables.ended().await;
    assert_eq!(runs.len(), threads.len() * RUNS_PER_THREAD);
    let retried = runs.values().filter(|r| r.attempt > 1).count();
    for ((thread, tag), run) in &runs {
        assert_eq!(
            run.status, "success",
            "run {tag} of {thread} ended {}",
            run.status
        );
    }
    check_threads(&http, &procs, &threads, RUNS_PER_THREAD).await;
    let reruns = check_effects(&backend, &runs);

    for p in &mut procs {
        let _ = p.child.kill().await;
    }
    drop(tables);
    backend.clean_up().await;
    format!(
        "{pauses} pauses, {mid_run} mid-run, {retried} runs claimed more than once, {reruns} steps started again after a stall"
    )
}

/// No step of a run started after the run ended, and no step ran twice at once
/// (on two workers, or two slots of one). Returns how many steps started again (a
/// stalled worker's step whose writes were refused runs again, once).
fn check_effects(backend: &Backend, runs: &HashMap<(String, String), Ended>) -> usize {
    let log = std::fs::read_to_string(backend.effects()).expect("the effect log");
    // (thread, tag, step) -> its starts and ends, in time order.
    let mut by_task: BTreeMap<(String, String, String), Vec<(i64, bool)>> = BTreeMap::new();
    for line in log.lines() {
        let parts: Vec<&str> = line.split(' ').collect();
        let [kind, who, tag, step, _proc, at] = parts[..] else {
            panic!("a malformed effect line: {line:?}");
        };
        let at: i64 = at.parse().expect("a time");
        by_task
            .entry((who.to_string(), tag.to_string(), step.to_string()))
            .or_default()
            .push((at, kind == "start"));
    }
    let mut reruns = 0;
    for ((who, tag, step), mut events) in by_task {
        events.sort_by_key(|(at, start)| (*at, *start));
        let ended = runs
            .get(&(who.clone(), tag.clone()))
            .unwrap_or_else(|| panic!("no run {tag} of {who}"));
        let mut open = 0i32;
        let mut starts = 0;
        for (at, start) in events {
            if start {
                starts += 1;
                open += 1;
                assert!(
                    open == 1,
                    "{step} of run {tag} on {who} started while it was running elsewhere"
                );
                assert!(
                    at < ended.at_us,
                    "{step} of run {tag} on {who} started after the run ended"
                );
            } else {
                open -= 1;
            }
        }
        reruns += starts - 1;
    }
    reruns
}
