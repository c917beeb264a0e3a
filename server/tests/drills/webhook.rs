//! The webhook drill: one server process, a run with a webhook, and a receiver that
//! fails the first two calls and is slow on the third — with the process killed
//! (SIGKILL) at the first call, and again in the middle of the slow one, and started
//! again each time. The receiver keeps a call by its idempotency key: it sees one
//! key, answered once with a 2xx, however many attempts came; the outbox ends the
//! delivery as made.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, StatusCode};
use serde_json::json;

use crate::tables::Tables;
use crate::{Backend, common, session_name, spawn};

/// One call: its key, and whether the receiver answered it with a 200.
type Calls = Arc<Mutex<Vec<(String, bool)>>>;

/// A receiver: 500 for calls 1 and 2, call 3 answered after `slow`, then 200s.
async fn receiver(slow: Duration) -> (String, Calls) {
    let calls: Calls = Arc::default();
    let seen = calls.clone();
    let app = axum::Router::new().fallback(move |headers: HeaderMap| {
        let seen = seen.clone();
        async move {
            let key = headers
                .get("idempotency-key")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string();
            let n = {
                let mut calls = seen.lock().expect("the calls");
                calls.push((key, false));
                calls.len()
            };
            if n <= 2 {
                return StatusCode::INTERNAL_SERVER_ERROR;
            }
            if n == 3 {
                tokio::time::sleep(slow).await;
            }
            seen.lock().expect("the calls")[n - 1].1 = true;
            StatusCode::OK
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let addr = listener.local_addr().expect("an address");
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}/hook"), calls)
}

async fn wait_calls(calls: &Calls, n: usize) {
    let until = Instant::now() + Duration::from_secs(60);
    while calls.lock().expect("the calls").len() < n {
        assert!(Instant::now() < until, "the receiver never got call {n}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

pub(crate) async fn drill(backend: Backend) -> String {
    let http = reqwest::Client::new();
    let lease = crate::kill::LEASE;
    let (url, calls) = receiver(Duration::from_secs(3)).await;
    let mut proc = spawn(&backend, 0, 0, lease).await;
    let tables = Tables::open(&backend).await;
    let (status, t) = common::post(&http, &format!("{}/threads", proc.base), json!({})).await;
    assert_eq!(status, 200, "{t}");
    let t = t["thread_id"].as_str().expect("a thread id").to_string();
    let (status, run) = common::post(
        &http,
        &format!("{}/threads/{t}/runs", proc.base),
        json!({
            "assistant_id": "quick",
            "input": { "tag": "hook", "who": t, "delay_ms": 0 },
            "webhook": url,
        }),
    )
    .await;
    assert_eq!(status, 200, "{run}");
    let run_id = run["run_id"].as_str().expect("a run id").to_string();

    // Killed once the run ended and its first call came, and again in the middle
    // of the slow third call.
    for (generation, call) in [(1, 1), (2, 3)] {
        wait_calls(&calls, call).await;
        if call == 3 {
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        proc.child.kill().await.expect("SIGKILL");
        if let Backend::Postgres { schema, .. } = &backend {
            tables
                .wait_sessions_gone(&session_name(schema, &proc.name))
                .await;
        }
        proc = spawn(&backend, 0, generation, lease).await;
    }

    let until = Instant::now() + Duration::from_secs(60);
    while tables.webhook_state(&run_id).await.as_deref() != Some("delivered") {
        assert!(Instant::now() < until, "the call was never marked made");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let calls = calls.lock().expect("the calls").clone();
    let keys: BTreeSet<&str> = calls.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys.len(), 1, "attempts carried different keys: {calls:?}");
    assert!(
        calls.len() >= 4,
        "the killed slow call was not made again: {calls:?}"
    );
    let answered = calls.iter().filter(|(_, ok)| *ok).count();
    assert!(answered >= 1, "no call was answered: {calls:?}");

    let _ = proc.child.kill().await;
    backend.clean_up().await;
    format!(
        "{} attempts under one key, {answered} answered with a 200",
        calls.len()
    )
}
