//! The creation drill: a server process killed with SIGKILL while 200 creations are
//! in flight — each a new thread and a run on it — eight times, started again each
//! time. Afterwards every thread that got a run names its graph: its state and
//! history read through the API show what its run did.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};

use crate::tables::Tables;
use crate::{Backend, Seeded, common, session_name, spawn};

const KILLS: usize = 8;
const IN_FLIGHT: usize = 200;
const SEED: u64 = 0x5EED_2026_C4EA_7E00;
const LEASE: Duration = Duration::from_millis(1500);

/// Creates thread `t` and a run on it; whichever part the kill lets through. Counts
/// the creations that got their run's answer in `done`.
async fn create(http: reqwest::Client, base: String, t: String, done: Arc<AtomicUsize>) {
    let made = http
        .post(format!("{base}/threads"))
        .json(&json!({ "thread_id": t }))
        .send()
        .await;
    if made.is_err() {
        return;
    }
    let queued = http
        .post(format!("{base}/threads/{t}/runs"))
        .json(&json!({
            "assistant_id": "quick",
            "input": { "tag": "r0", "who": t, "delay_ms": 1 },
        }))
        .send()
        .await;
    if queued.is_ok_and(|r| r.status().is_success()) {
        done.fetch_add(1, Ordering::SeqCst);
    }
}

pub(crate) async fn drill(backend: Backend) -> String {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("a client");
    let mut proc = spawn(&backend, 0, 0, LEASE).await;
    let tables = Tables::open(&backend).await;
    let mut rng = Seeded(SEED);
    let mut threads = Vec::new();
    let mut cut = 0;
    for round in 0..KILLS {
        let base = proc.base.clone();
        let done = Arc::new(AtomicUsize::new(0));
        let flights: Vec<_> = (0..IN_FLIGHT)
            .map(|i| {
                let t = format!("create-{round}-{i}");
                threads.push(t.clone());
                tokio::spawn(create(http.clone(), base.clone(), t, done.clone()))
            })
            .collect();
        // Killed once the creations are under way: after the first run is queued.
        let waiting = Instant::now();
        while done.load(Ordering::SeqCst) == 0 && waiting.elapsed() < Duration::from_secs(20) {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        tokio::time::sleep(Duration::from_millis(rng.next() % 40)).await;
        proc.child.kill().await.expect("SIGKILL");
        for f in flights {
            let _ = f.await;
        }
        let finished = done.load(Ordering::SeqCst);
        assert!(
            finished > 0,
            "round {round}: no creation got as far as a run"
        );
        if finished < IN_FLIGHT {
            cut += 1;
        }
        if let Backend::Postgres { schema, .. } = &backend {
            tables
                .wait_sessions_gone(&session_name(schema, &proc.name))
                .await;
        }
        proc = spawn(&backend, 0, round + 1, LEASE).await;
    }
    let waiting = Instant::now();
    while tables.active("").await.1 > 0 {
        assert!(
            waiting.elapsed() < Duration::from_secs(120),
            "runs still pending or running two minutes after the last kill"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let ran = tables.ended().await;
    let with_runs: Vec<&String> = threads
        .iter()
        .filter(|t| ran.contains_key(&((*t).clone(), "r0".to_string())))
        .collect();
    for t in &with_runs {
        let run = &ran[&((*t).clone(), "r0".to_string())];
        assert_eq!(run.status, "success", "the run of {t}");
    }
    let base = proc.base.clone();
    let checks: Vec<_> = with_runs
        .iter()
        .map(|t| check_thread(http.clone(), base.clone(), (*t).clone()))
        .collect();
    futures::stream::iter(checks)
        .buffer_unordered(16)
        .collect::<Vec<()>>()
        .await;
    let with_runs = with_runs.len();
    assert!(
        cut >= KILLS - 1,
        "only {cut} of {KILLS} kills cut creations in flight: the drill needs more of them"
    );
    let _ = proc.child.kill().await;
    drop(tables);
    backend.clean_up().await;
    format!(
        "{KILLS} kills with {IN_FLIGHT} creations in flight ({cut} cut some short), {} threads asked for, {with_runs} with a run",
        threads.len()
    )
}

/// Thread `t`, which got a run: its state and history show the run's work, and it
/// names its graph.
async fn check_thread(http: reqwest::Client, base: String, t: String) {
    let state = http
        .get(format!("{base}/threads/{t}/state"))
        .send()
        .await
        .expect("a state");
    let (status, state) = common::read(state).await;
    assert_eq!(status, 200, "{state}");
    assert_eq!(
        state["values"]["done"],
        json!(["s1@r0"]),
        "thread {t}: its run's step, read through the API"
    );
    let (status, history) = common::post(
        &http,
        &format!("{base}/threads/{t}/history"),
        json!({ "limit": 100 }),
    )
    .await;
    assert_eq!(status, 200, "{history}");
    assert!(
        history.as_array().is_some_and(|h| !h.is_empty()),
        "thread {t}: its history, read through the API: {history}"
    );
    let (_, thread) = common::read(
        http.get(format!("{base}/threads/{t}"))
            .send()
            .await
            .expect("a thread"),
    )
    .await;
    assert_eq!(
        thread["metadata"]["graph_id"],
        Value::from("quick"),
        "{thread}"
    );
}
