//! The cancel drill: cancels and client disconnects (`on_disconnect: "cancel"`)
//! landing anywhere in the first 100 ms of a run — while it is queued, claimed,
//! taking its thread's lock, loading, running — on SQLite and on PostgreSQL. After
//! each, the thread's next run starts at once: nothing is left holding the thread.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::Harness;
use crate::pg;

/// Rounds of each kind; they run `LANES` at a time.
const ROUNDS: u64 = 50;
const LANES: u64 = 5;

/// One round: a run (three 2 s steps) stopped `after` its creation, then the next
/// run of its thread must finish well before the stopped run would have, and
/// inside the lock timeout (30 s) a leaked lock would cost.
async fn round(h: &Harness, after: Duration, disconnect: bool) {
    let t = h.thread().await;
    let body = json!({ "assistant_id": "job", "input": { "delay_ms": 2000 },
                       "on_disconnect": "cancel" });
    if disconnect {
        let response = h
            .http
            .post(h.url(&format!("/threads/{t}/runs/stream")))
            .json(&body)
            .send();
        // The client goes away `after` it sent the request (or before the answer).
        let _ = tokio::time::timeout(after, response).await;
    } else {
        let run = h.background(&t, body).await;
        tokio::time::sleep(after).await;
        let (status, out) = h
            .post(&format!("/threads/{t}/runs/{run}/cancel"), json!({}))
            .await;
        assert!(status == 202 || status == 409, "{status} {out}");
    }
    let started = Instant::now();
    let (status, out) = h
        .post(
            &format!("/threads/{t}/runs/wait"),
            json!({ "assistant_id": "job", "input": { "delay_ms": 1 },
                    "multitask_strategy": "enqueue" }),
        )
        .await;
    assert_eq!(status, 200, "{out}");
    assert!(
        out["log"].as_array().is_some_and(|l| !l.is_empty()),
        "{out}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "the next run of a thread stopped {after:?} into its run took {:?}",
        started.elapsed()
    );
}

async fn drill(h: &Harness) {
    for disconnect in [false, true] {
        let lanes = (0..LANES).map(|lane| async move {
            for i in (lane..ROUNDS).step_by(LANES as usize) {
                // 0–100 ms, spread over the rounds.
                round(h, Duration::from_millis(i * 2), disconnect).await;
            }
        });
        futures::future::join_all(lanes).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancels_and_disconnects_in_a_runs_first_100_ms_leave_its_thread_free_on_sqlite() {
    let h = Harness::start_with(|s| s.workers(4)).await;
    drill(&h).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancels_and_disconnects_in_a_runs_first_100_ms_leave_its_thread_free_on_postgres() {
    let Some(url) = pg::postgres_url("cancel_drill_on_postgres") else {
        return;
    };
    let schema = pg::fresh_schema("sg_srv_cancels");
    let h = Harness::bind(pg::server(&url, &schema).workers(4)).await;
    drill(&h).await;
    pg::drop_schema(&url, &schema).await;
}
