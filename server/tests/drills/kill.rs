//! The kill drill: three server processes on one PostgreSQL database, 200 runs over
//! 50 threads (four queued per thread), and one process at a time killed with
//! SIGKILL in the middle of its runs — at least ten times, the victim chosen by a
//! seeded generator — and started again. At the end every run is a success, each
//! thread's state holds every step of every run exactly once (a finished step
//! executed again would append twice), in order, and its history has as many
//! checkpoints as the same runs make in memory without a crash.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crate::tables::Tables;
use crate::{Backend, Proc, Seeded, check_threads, queue_runs, session_name, spawn};

const PROCESSES: usize = 3;
const THREADS: usize = 50;
const RUNS_PER_THREAD: usize = 4;
const STEP_MS: u64 = 150;
pub(crate) const LEASE: Duration = Duration::from_millis(1500);
const KILLS_MID_RUN: usize = 10;
const SEED: u64 = 0x5EED_2026_D011;

pub(crate) async fn drill(url: String) -> String {
    let backend = Backend::postgres(&url, "sg_srv_drill");
    let Backend::Postgres { schema, .. } = &backend else {
        unreachable!("a PostgreSQL backend")
    };
    let schema = schema.clone();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("a client");
    // All three start together: the tables are created once, under the lock.
    let mut procs: Vec<Proc> =
        futures::future::join_all((0..PROCESSES).map(|i| spawn(&backend, i, 0, LEASE))).await;
    let mut generations = [0usize; PROCESSES];
    let tables = Tables::open(&backend).await;

    // 50 threads and 200 runs, through every process in turn.
    let threads: Vec<String> = (0..THREADS).map(|t| format!("drill-{t}")).collect();
    queue_runs(&http, &procs, &threads, RUNS_PER_THREAD, STEP_MS).await;

    // Kill a process holding running runs, start it again; until ten kills caught
    // runs in the middle.
    let mut rng = Seeded(SEED);
    let mut kills = 0usize;
    let mut mid_run = 0usize;
    let mut interrupted: BTreeSet<(String, String)> = BTreeSet::new();
    while mid_run < KILLS_MID_RUN {
        assert!(
            kills < 4 * KILLS_MID_RUN,
            "{kills} kills caught only {mid_run} processes in the middle of runs"
        );
        let victim = usize::try_from(rng.next() % PROCESSES as u64).unwrap_or(0);
        let prefix = format!("{}/", procs[victim].name);
        let waiting = Instant::now();
        loop {
            let (held, left) = tables.active(&prefix).await;
            assert!(
                left > 0,
                "the runs all ended after {kills} kills ({mid_run} mid-run): the drill needs slower runs"
            );
            if held > 0 || waiting.elapsed() > Duration::from_secs(3) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // Somewhere inside a step.
        tokio::time::sleep(Duration::from_millis(rng.next() % STEP_MS)).await;
        procs[victim].child.kill().await.expect("SIGKILL");
        kills += 1;
        // A commit it sent just before dying may still land: wait for its sessions
        // to end, so what it held is final.
        tables
            .wait_sessions_gone(&session_name(&schema, &procs[victim].name))
            .await;
        // Its runs still marked running are ones it died in: nobody else can have
        // touched them before their lease expires.
        let held = tables.held(&prefix).await;
        if !held.is_empty() {
            mid_run += 1;
            interrupted.extend(held);
        }
        generations[victim] += 1;
        procs[victim] = spawn(&backend, victim, generations[victim], LEASE).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // Everything ends.
    let waiting = Instant::now();
    loop {
        let (_, left) = tables.active("").await;
        if left == 0 {
            break;
        }
        assert!(
            waiting.elapsed() < Duration::from_secs(120),
            "{left} runs still pending or running two minutes after the last kill"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Every run succeeded, once; the runs a killed process held were taken over.
    let runs = tables.ended().await;
    assert_eq!(runs.len(), THREADS * RUNS_PER_THREAD);
    let mut retried = 0;
    for (run, ended) in &runs {
        assert_eq!(
            ended.status, "success",
            "run {run:?} ended {}",
            ended.status
        );
        if interrupted.contains(run) {
            assert!(
                ended.attempt >= 2,
                "run {run:?} was interrupted by a kill but claimed once"
            );
        }
        if ended.attempt > 1 {
            retried += 1;
        }
    }

    check_threads(&http, &procs, &threads, RUNS_PER_THREAD).await;

    for p in &mut procs {
        let _ = p.child.kill().await;
    }
    backend.clean_up().await;
    format!(
        "{kills} kills, {mid_run} mid-run, {} runs interrupted, {retried} runs claimed more than once",
        interrupted.len()
    )
}
