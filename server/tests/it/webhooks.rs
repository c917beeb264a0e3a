//! Webhooks against a real receiver on loopback: a run's end is POSTed once it
//! ended, signed, with one idempotency key across retries; internal addresses are
//! refused at creation, and a redirect to a host that is not allowed is not
//! followed. The kill -9 drill is in `drills/webhook.rs`.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use common::Harness;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use stategraph_server::Webhooks;

/// One call the receiver got.
#[derive(Clone, Debug)]
pub(crate) struct Call {
    pub(crate) key: String,
    pub(crate) signature: Option<String>,
    pub(crate) body: Value,
    pub(crate) raw: Vec<u8>,
}

/// A receiver on loopback: answers the first `fail_first` calls with a 500 and the
/// rest with a 200; every call recorded.
pub(crate) struct Receiver {
    pub(crate) url: String,
    pub(crate) calls: Arc<Mutex<Vec<Call>>>,
}

impl Receiver {
    pub(crate) async fn start(
        fail_first: usize,
        answer: impl Fn(usize) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        let calls: Arc<Mutex<Vec<Call>>> = Arc::default();
        let seen = calls.clone();
        let answer = Arc::new(answer);
        let app =
            axum::Router::new().fallback(move |headers: HeaderMap, raw: axum::body::Bytes| {
                let seen = seen.clone();
                let answer = answer.clone();
                async move {
                    let header = |name: &str| {
                        headers
                            .get(name)
                            .and_then(|v| v.to_str().ok())
                            .map(str::to_string)
                    };
                    let n = {
                        let mut calls = seen.lock().expect("the calls");
                        calls.push(Call {
                            key: header("idempotency-key").unwrap_or_default(),
                            signature: header("x-stategraph-signature"),
                            body: serde_json::from_slice(&raw).unwrap_or(Value::Null),
                            raw: raw.to_vec(),
                        });
                        calls.len()
                    };
                    if let Some(to) = answer(n) {
                        return (StatusCode::TEMPORARY_REDIRECT, [("location", to)])
                            .into_response();
                    }
                    if n <= fail_first {
                        StatusCode::INTERNAL_SERVER_ERROR.into_response()
                    } else {
                        StatusCode::OK.into_response()
                    }
                }
            });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a port");
        let addr = listener.local_addr().expect("an address");
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self {
            url: format!("http://{addr}/hook"),
            calls,
        }
    }

    pub(crate) fn calls(&self) -> Vec<Call> {
        self.calls.lock().expect("the calls").clone()
    }

    /// Waits until it got `n` calls.
    pub(crate) async fn wait_for(&self, n: usize, within: Duration) -> Vec<Call> {
        let until = Instant::now() + within;
        loop {
            let calls = self.calls();
            if calls.len() >= n {
                return calls;
            }
            assert!(
                Instant::now() < until,
                "{} calls within {within:?}, wanted {n}",
                calls.len()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

fn never(_: usize) -> Option<String> {
    None
}

const SECRET: &str = "receiver-shared-secret";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_end_is_posted_signed_with_its_values() {
    let receiver = Receiver::start(0, never).await;
    let h = Harness::start_with(|s| s.webhooks(Webhooks::new().allow("127.0.0.1").secret(SECRET)))
        .await;
    let t = h.thread().await;
    let run = h
        .background(
            &t,
            json!({ "assistant_id": "job", "input": {}, "webhook": receiver.url }),
        )
        .await;
    let calls = receiver.wait_for(1, Duration::from_secs(10)).await;
    let call = &calls[0];
    assert_eq!(call.body["run_id"], run.as_str());
    assert_eq!(call.body["thread_id"], t.as_str());
    assert_eq!(call.body["status"], "success");
    assert_eq!(call.body["values"]["log"], json!(["first", "second"]));
    for key in [
        "run_started_at",
        "run_ended_at",
        "webhook_sent_at",
        "created_at",
    ] {
        assert!(call.body[key].is_string(), "no `{key}`: {}", call.body);
    }
    assert!(!call.key.is_empty(), "no idempotency key");
    // The signature is the HMAC of `<t>.<body>` under the shared secret.
    let signature = call.signature.clone().expect("a signature");
    let (t_part, v1) = signature.split_once(",v1=").expect("t=…,v1=…");
    let at = t_part.strip_prefix("t=").expect("t=");
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(SECRET.as_bytes()).expect("a key");
    mac.update(format!("{at}.").as_bytes());
    mac.update(&call.raw);
    let expected: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(v1, expected);
    // Once: nothing more comes.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(receiver.calls().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_receiver_is_retried_under_one_key_until_it_answers() {
    let receiver = Receiver::start(2, never).await;
    let h = Harness::start_with(|s| s.webhooks(Webhooks::new().allow("127.0.0.1"))).await;
    let t = h.thread().await;
    h.background(
        &t,
        json!({ "assistant_id": "job", "input": {}, "webhook": receiver.url }),
    )
    .await;
    let calls = receiver.wait_for(3, Duration::from_secs(15)).await;
    assert!(calls.iter().all(|c| c.key == calls[0].key), "{calls:?}");
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(receiver.calls().len(), 3, "called again after a 200");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_to_internal_addresses_are_refused_unless_allowed() {
    let h = Harness::start().await;
    let t = h.thread().await;
    for url in [
        "http://127.0.0.1:9/hook",
        "http://10.0.0.1/hook",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]:9/hook",
        "http://localhost:9/hook",
        "http://0x7f000001/hook",
        "ftp://example.com/hook",
        "not a url",
    ] {
        let (status, err) = h
            .post(
                &format!("/threads/{t}/runs"),
                json!({ "assistant_id": "job", "webhook": url }),
            )
            .await;
        assert_eq!(status, 422, "{url}: {err}");
        assert_eq!(err["errors"][0]["path"], "$.webhook", "{url}: {err}");
    }
    let (status, err) = h
        .post("/runs/crons", json!({ "assistant_id": "job", "schedule": "0 9 * * *", "webhook": "http://10.1.2.3/" }))
        .await;
    assert_eq!(
        (status, &err["errors"][0]["path"]),
        (422, &json!("$.webhook")),
        "{err}"
    );
    let (_, runs) = h.get(&format!("/threads/{t}/runs")).await;
    assert_eq!(runs, json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_to_a_host_not_allowed_is_not_followed() {
    let inner = Receiver::start(0, never).await;
    let port = inner
        .url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/hook")
        .to_string();
    let to = format!("http://localhost:{port}/hook");
    let outer = Receiver::start(0, move |_| Some(to.clone())).await;
    let h =
        Harness::start_with(|s| s.webhooks(Webhooks::new().allow("127.0.0.1").attempts(2))).await;
    let t = h.thread().await;
    h.background(
        &t,
        json!({ "assistant_id": "job", "input": {}, "webhook": outer.url }),
    )
    .await;
    outer.wait_for(2, Duration::from_secs(10)).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(outer.calls().len(), 2, "tried more than its attempts");
    assert!(
        inner.calls().is_empty(),
        "a redirect reached `localhost`, which is not allowed"
    );
    // The same redirect to the allowed address is followed.
    let allowed = inner.url.clone();
    let via = Receiver::start(0, move |_| Some(allowed.clone())).await;
    h.background(
        &t,
        json!({ "assistant_id": "job", "input": {}, "webhook": via.url }),
    )
    .await;
    inner.wait_for(1, Duration::from_secs(10)).await;
}
