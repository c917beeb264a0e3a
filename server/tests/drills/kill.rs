//! The kill drill: three server processes on one PostgreSQL database, 200 runs over
//! 50 threads (four queued per thread), and one process at a time killed with
//! SIGKILL in the middle of its runs — at least ten times, the victim chosen by a
//! seeded generator — and started again. At the end every run is a success, each
//! thread's state holds every step of every run exactly once (a finished step
//! executed again would append twice), in order, and its history has as many
//! checkpoints as the same runs make in memory without a crash.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crate::{Backend, Proc, Seeded, check_threads, pg, queue_runs, session_name, spawn};

const PROCESSES: usize = 3;
const THREADS: usize = 50;
const RUNS_PER_THREAD: usize = 4;
const STEP_MS: u64 = 150;
pub(crate) const LEASE: Duration = Duration::from_millis(1500);
const KILLS_MID_RUN: usize = 10;
const SEED: u64 = 0x5EED_2026_D011;

async fn sql(url: &str, schema: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(pg::plain(url), tokio_postgres::NoTls)
        .await
        .expect("a connection for the drill's checks");
    tokio::spawn(connection);
    client
        .batch_execute(&format!("SET search_path TO \"{schema}\""))
        .await
        .expect("search_path");
    client
}

async fn count(db: &tokio_postgres::Client, sql: &str, param: &str) -> i64 {
    db.query_one(sql, &[&param])
        .await
        .expect("a count")
        .get::<_, i64>(0)
}

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
    let db = sql(&url, &schema).await;

    // 50 threads and 200 runs, through every process in turn.
    let threads: Vec<String> = (0..THREADS).map(|t| format!("drill-{t}")).collect();
    queue_runs(&http, &procs, &threads, RUNS_PER_THREAD, STEP_MS).await;

    // Kill a process holding running runs, start it again; until ten kills caught
    // runs in the middle.
    let mut rng = Seeded(SEED);
    let mut kills = 0usize;
    let mut mid_run = 0usize;
    let mut interrupted: BTreeSet<String> = BTreeSet::new();
    while mid_run < KILLS_MID_RUN {
        assert!(
            kills < 4 * KILLS_MID_RUN,
            "{kills} kills caught only {mid_run} processes in the middle of runs"
        );
        let victim = usize::try_from(rng.next() % PROCESSES as u64).unwrap_or(0);
        let prefix = format!("{}/%", procs[victim].name);
        let waiting = Instant::now();
        loop {
            let left = count(
                &db,
                "SELECT count(*) FROM sg_runs WHERE status IN ('pending', 'running') AND $1 <> ''",
                "x",
            )
            .await;
            assert!(
                left > 0,
                "the runs all ended after {kills} kills ({mid_run} mid-run): the drill needs slower runs"
            );
            let held = count(
                &db,
                "SELECT count(*) FROM sg_runs WHERE status = 'running' AND worker LIKE $1",
                &prefix,
            )
            .await;
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
        let session = session_name(&schema, &procs[victim].name);
        let gone = Instant::now();
        while count(
            &db,
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
            &session,
        )
        .await
            > 0
        {
            assert!(
                gone.elapsed() < Duration::from_secs(10),
                "the killed process's sessions linger"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // Its runs still marked running are ones it died in: nobody else can have
        // touched them before their lease expires.
        let held: Vec<String> = db
            .query(
                "SELECT run_id FROM sg_runs WHERE status = 'running' AND worker LIKE $1",
                &[&prefix],
            )
            .await
            .expect("the victim's runs")
            .iter()
            .map(|r| r.get(0))
            .collect();
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
        let left = count(
            &db,
            "SELECT count(*) FROM sg_runs WHERE status IN ('pending', 'running') AND $1 <> ''",
            "x",
        )
        .await;
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
    let rows = db
        .query(
            "SELECT run_id, status, attempt FROM sg_runs ORDER BY seq",
            &[],
        )
        .await
        .expect("the runs");
    assert_eq!(rows.len(), THREADS * RUNS_PER_THREAD);
    let mut retried = 0;
    for r in &rows {
        let (id, status, attempt): (String, String, i32) = (r.get(0), r.get(1), r.get(2));
        assert_eq!(status, "success", "run {id} ended {status}");
        if interrupted.contains(&id) {
            assert!(
                attempt >= 2,
                "run {id} was interrupted by a kill but claimed once"
            );
        }
        if attempt > 1 {
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
