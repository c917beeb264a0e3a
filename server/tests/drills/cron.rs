//! The cron drill: server processes on one database (three on PostgreSQL, two on
//! SQLite) share a cron that fires every second for 30 s, and each process is killed
//! with SIGKILL once during it, at a seeded moment, and started again. Read from the
//! runs table afterwards, the cron's runs cover every tick of the window exactly once:
//! no tick has two runs, and none is left out (a run that stands for ticks its
//! firing came too late for says so in `cron_missed`, and those ticks count as its).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::tables::Tables;
use crate::{Backend, Proc, Seeded, common, session_name, spawn};

/// How long the cron fires.
const WINDOW: Duration = Duration::from_secs(30);
const SEED: u64 = 0xC205_2026_0001;

fn ms(tick: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(tick)
        .unwrap_or_else(|e| panic!("a cron tick `{tick}`: {e}"))
        .timestamp_millis()
}

pub(crate) async fn drill(backend: Backend, processes: usize) -> String {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("a client");
    let lease = crate::kill::LEASE;
    let mut procs: Vec<Proc> =
        futures::future::join_all((0..processes).map(|i| spawn(&backend, i, 0, lease))).await;
    let tables = Tables::open(&backend).await;

    let (status, cron) = common::post(
        &http,
        &format!("{}/runs/crons", procs[0].base),
        json!({
            "assistant_id": "quick",
            "schedule": "* * * * * *",
            "input": { "tag": "tick", "who": "cron", "delay_ms": 50 },
            "on_run_completed": "keep",
        }),
    )
    .await;
    assert_eq!(status, 200, "{cron}");
    let cron_id = cron["cron_id"].as_str().expect("a cron id").to_string();

    // Each process killed once, at a seeded moment of its share of the window.
    let started = Instant::now();
    let mut rng = Seeded(SEED);
    let share = WINDOW.as_millis() / u128::try_from(processes).unwrap_or(1);
    for (victim, proc) in procs.iter_mut().enumerate() {
        let offset = u64::try_from(share * victim as u128).unwrap_or(0)
            + rng.next() % u64::try_from(share).unwrap_or(1).max(1);
        let at = started + Duration::from_millis(offset);
        tokio::time::sleep_until(at.into()).await;
        proc.child.kill().await.expect("SIGKILL");
        if let Backend::Postgres { schema, .. } = &backend {
            tables
                .wait_sessions_gone(&session_name(schema, &proc.name))
                .await;
        }
        *proc = spawn(&backend, victim, 1, lease).await;
    }
    tokio::time::sleep_until((started + WINDOW).into()).await;

    // Stopped, then read once nothing can fire any more.
    let alive = &procs[0];
    let stopped = http
        .delete(format!("{}/runs/crons/{cron_id}", alive.base))
        .send()
        .await
        .expect("a response");
    assert_eq!(stopped.status().as_u16(), 204);
    tokio::time::sleep(Duration::from_millis(500)).await;

    let runs = tables.cron_runs(&cron_id).await;
    let mut covered: BTreeSet<i64> = BTreeSet::new();
    let mut missed_total = 0;
    for (tick, missed) in &runs {
        missed_total += missed;
        for k in 0..=*missed {
            let at = ms(tick) + k * 1000;
            assert!(covered.insert(at), "tick {at} has two runs: {runs:?}");
        }
    }
    let (Some(first), Some(last)) = (covered.first(), covered.last()) else {
        panic!("the cron made no run");
    };
    let span = (last - first) / 1000 + 1;
    assert_eq!(
        usize::try_from(span).unwrap_or(0),
        covered.len(),
        "ticks between {first} and {last} have no run: {runs:?}"
    );
    let window = i64::try_from(WINDOW.as_secs()).unwrap_or(0);
    assert!(
        span >= window - 2,
        "only {span} ticks covered in a {window} s window"
    );
    assert!(
        missed_total <= 10,
        "{missed_total} ticks were only made up for: the scheduler fell behind"
    );

    for p in &mut procs {
        let _ = p.child.kill().await;
    }
    backend.clean_up().await;
    format!(
        "{processes} processes, {} runs for {span} ticks, {missed_total} made up for",
        runs.len()
    )
}
