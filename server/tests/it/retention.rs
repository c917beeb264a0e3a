//! Thread retention: threads whose time to live is over are deleted, or kept with
//! their latest checkpoint, by the sweeper — while runs go on — and no live thread
//! is touched; `POST /threads/prune` does the same on request; `?include=ttl` shows
//! a thread's time to live; bad ones are 422s naming the field.

use crate::common;
use crate::pg;

use std::time::{Duration, Instant};

use common::Harness;
use futures::StreamExt;
use serde_json::{Value, json};
use stategraph_server::{Server, ThreadTtl};

const SHORT: f64 = 0.02; // minutes: 1.2 s

/// Makes a thread of the job graph with `kind` in its metadata, the given `ttl`,
/// and `updates` state updates (each a checkpoint).
async fn thread_with(h: &Harness, kind: &str, ttl: Option<Value>, updates: usize) -> String {
    let mut body = json!({ "graph_id": "job", "metadata": { "kind": kind } });
    if let Some(ttl) = ttl {
        body["ttl"] = ttl;
    }
    let (status, t) = h.post("/threads", body).await;
    assert_eq!(status, 200, "{t}");
    let id = t["thread_id"].as_str().expect("an id").to_string();
    for n in 0..updates {
        let (status, out) = h
            .post(
                &format!("/threads/{id}/state"),
                json!({ "values": { "count": n + 1 }, "as_node": "first" }),
            )
            .await;
        assert_eq!(status, 200, "{out}");
    }
    id
}

async fn count(h: &Harness, kind: &str) -> u64 {
    let (_, n) = h
        .post("/threads/count", json!({ "metadata": { "kind": kind } }))
        .await;
    n.as_u64().expect("a count")
}

async fn history_len(h: &Harness, id: &str) -> usize {
    let (_, history) = h
        .post(&format!("/threads/{id}/history"), json!({ "limit": 100 }))
        .await;
    history.as_array().map_or(0, Vec::len)
}

/// Pages of the SQLite file in use (not free).
fn used_pages(file: &std::path::Path) -> i64 {
    let db = rusqlite::Connection::open(file).expect("the server's file");
    let pages: i64 = db
        .query_row("PRAGMA page_count", [], |r| r.get(0))
        .expect("pages");
    let free: i64 = db
        .query_row("PRAGMA freelist_count", [], |r| r.get(0))
        .expect("free pages");
    pages - free
}

/// Makes `n` threads of `kind` at once (16 at a time).
async fn many(
    h: &Harness,
    n: usize,
    kind: &str,
    ttl: Option<Value>,
    updates: usize,
) -> Vec<String> {
    futures::stream::iter(0..n)
        .map(|_| thread_with(h, kind, ttl.clone(), updates))
        .buffer_unordered(16)
        .collect()
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_threads_expire_under_load_and_no_live_one_is_touched() {
    let h = Harness::start().await;
    let file = h
        .dir
        .as_ref()
        .expect("a temp dir")
        .path()
        .join("server.sqlite");
    let doomed = many(&h, 700, "doomed", Some(json!({ "ttl": SHORT })), 1).await;
    let kept = many(
        &h,
        200,
        "kept",
        Some(json!({ "ttl": SHORT, "strategy": "keep_latest" })),
        3,
    )
    .await;
    let live = many(&h, 100, "live", None, 3).await;
    let before = used_pages(&file);

    // Runs go on meanwhile, on live threads.
    let busy: Vec<String> = live[..4].to_vec();
    let load = {
        let http = h.http.clone();
        let base = h.base.clone();
        tokio::spawn(async move {
            let mut runs = 0;
            let until = Instant::now() + Duration::from_secs(4);
            while Instant::now() < until {
                for t in &busy {
                    let (status, _) = common::post(
                        &http,
                        &format!("{base}/threads/{t}/runs/wait"),
                        json!({ "assistant_id": "job", "input": {} }),
                    )
                    .await;
                    assert_eq!(status, 200);
                    runs += 1;
                }
            }
            runs
        })
    };

    let until = Instant::now() + Duration::from_secs(60);
    while count(&h, "doomed").await > 0 {
        assert!(
            Instant::now() < until,
            "expired threads are still there after a minute"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let runs = load.await.expect("the load");
    assert!(runs > 0);
    for id in doomed.iter().take(20) {
        assert_eq!(h.get(&format!("/threads/{id}")).await.0, 404);
        assert_eq!(history_len(&h, id).await, 0);
    }
    // Kept ones keep their latest checkpoint only; live ones all of theirs.
    let until = Instant::now() + Duration::from_secs(30);
    for id in &kept {
        while history_len(&h, id).await != 1 {
            assert!(
                Instant::now() < until,
                "thread {id} kept more than its latest checkpoint"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let (_, state) = h.get(&format!("/threads/{id}/state")).await;
        // `count` adds up: 1 + 2 + 3.
        assert_eq!(state["values"]["count"], 6, "{state}");
    }
    assert_eq!(count(&h, "kept").await, 200);
    assert_eq!(count(&h, "live").await, 100);
    for id in &live[4..] {
        assert_eq!(
            history_len(&h, id).await,
            3,
            "live thread {id} lost checkpoints"
        );
    }
    let after = used_pages(&file);
    assert!(
        after < before,
        "the database did not shrink: {before} → {after} pages in use"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_threads_are_swept_on_postgres() {
    let Some(url) = pg::postgres_url("expired_threads_are_swept_on_postgres") else {
        return;
    };
    let schema = pg::fresh_schema("sg_srv_ttl");
    let h = Harness::bind(pg::server(&url, &schema)).await;
    let doomed = many(&h, 40, "doomed", Some(json!({ "ttl": SHORT })), 1).await;
    let kept = many(
        &h,
        10,
        "kept",
        Some(json!({ "ttl": SHORT, "strategy": "keep_latest" })),
        3,
    )
    .await;
    let live = many(&h, 10, "live", None, 2).await;
    let until = Instant::now() + Duration::from_secs(30);
    while count(&h, "doomed").await > 0 || history_len(&h, &kept[9]).await != 1 {
        assert!(Instant::now() < until, "expired threads are still there");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(h.get(&format!("/threads/{}", doomed[0])).await.0, 404);
    assert_eq!(count(&h, "kept").await, 10);
    assert_eq!(history_len(&h, &live[0]).await, 2);
    h.running.shutdown().await.expect("a clean shutdown");
    pg::drop_schema(&url, &schema).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_deletes_or_keeps_the_latest_and_the_default_ttl_shows() {
    let day = Duration::from_secs(86_400);
    let h = Harness::start_with(|s: Server| s.thread_ttl(ThreadTtl::keep_latest_after(day))).await;
    let a = thread_with(&h, "p", None, 3).await;
    let b = thread_with(&h, "p", None, 3).await;
    let (_, pruned) = h
        .post(
            "/threads/prune",
            json!({ "thread_ids": [a, "no-such-thread"], "strategy": "keep_latest" }),
        )
        .await;
    assert_eq!(pruned, json!({ "pruned_count": 1 }));
    assert_eq!(history_len(&h, &a).await, 1);
    let (_, pruned) = h
        .post("/threads/prune", json!({ "thread_ids": [a, b] }))
        .await;
    assert_eq!(pruned, json!({ "pruned_count": 2 }));
    assert_eq!(count(&h, "p").await, 0);
    assert_eq!(history_len(&h, &b).await, 0);

    // The server's default, and a thread's own.
    let c = thread_with(&h, "q", None, 0).await;
    let (_, got) = h.get(&format!("/threads/{c}?include=ttl")).await;
    assert_eq!(got["ttl"]["strategy"], "keep_latest", "{got}");
    assert_eq!(got["ttl"]["ttl"], 1440.0);
    let (status, _) = h
        .http
        .patch(h.url(&format!("/threads/{c}")))
        .json(&json!({ "ttl": { "ttl": 5, "strategy": "delete" } }))
        .send()
        .await
        .map(|r| (r.status().as_u16(), ()))
        .expect("a response");
    assert_eq!(status, 200);
    let (_, got) = h.get(&format!("/threads/{c}?include=ttl")).await;
    assert_eq!(
        (got["ttl"]["strategy"].clone(), got["ttl"]["ttl"].clone()),
        (json!("delete"), json!(5.0))
    );
    assert!(got["ttl"]["expires_at"].is_string());
    assert!(h.get(&format!("/threads/{c}")).await.1.get("ttl").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_ttls_and_prunes_are_422s_naming_the_field() {
    let h = Harness::start().await;
    for (body, field) in [
        (json!({ "ttl": { "ttl": -1 } }), "$.ttl.ttl"),
        (json!({ "ttl": { "ttl": 0 } }), "$.ttl.ttl"),
        (
            json!({ "ttl": { "ttl": 5, "strategy": "archive" } }),
            "$.ttl.strategy",
        ),
        (json!({ "ttl": "soon" }), "$.ttl"),
    ] {
        let (status, err) = h.post("/threads", body.clone()).await;
        assert_eq!(status, 422, "{body} → {err}");
        assert_eq!(err["errors"][0]["path"], field, "{body} → {err}");
    }
    let (status, err) = h
        .post("/threads/prune", json!({ "thread_ids": "all" }))
        .await;
    assert_eq!(
        (status, &err["errors"][0]["path"]),
        (422, &json!("$.thread_ids"))
    );
    let (status, err) = h
        .post(
            "/threads/prune",
            json!({ "thread_ids": [], "strategy": "shred" }),
        )
        .await;
    assert_eq!(
        (status, &err["errors"][0]["path"]),
        (422, &json!("$.strategy"))
    );
    let t = h.thread().await;
    let (status, err) = h.get(&format!("/threads/{t}?include=secrets")).await;
    assert_eq!(
        (status, &err["errors"][0]["path"]),
        (422, &json!("query.include"))
    );
    let (_, n) = h.post("/threads/count", json!({})).await;
    assert_eq!(n, 1, "a refused create made a thread");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_racing_a_prune_answer_and_runs_keep_their_state() {
    let h = Harness::start().await;
    for round in 0..5 {
        let t = thread_with(&h, "race", None, 20).await;
        let reader = {
            let (http, base, t) = (h.http.clone(), h.base.clone(), t.clone());
            tokio::spawn(async move {
                for _ in 0..40 {
                    for path in ["history", "state"] {
                        let r = if path == "history" {
                            common::post(
                                &http,
                                &format!("{base}/threads/{t}/history"),
                                json!({ "limit": 100 }),
                            )
                            .await
                        } else {
                            common::read(
                                http.get(format!("{base}/threads/{t}/state"))
                                    .send()
                                    .await
                                    .expect("a response"),
                            )
                            .await
                        };
                        assert_eq!(r.0, 200, "round {round}: {path} racing a prune: {}", r.1);
                    }
                }
            })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        let (_, pruned) = h
            .post(
                "/threads/prune",
                json!({ "thread_ids": [t], "strategy": "keep_latest" }),
            )
            .await;
        assert_eq!(pruned, json!({ "pruned_count": 1 }));
        reader.await.expect("the reader");
        assert_eq!(history_len(&h, &t).await, 1);
        // A run continues from the kept checkpoint.
        let run = h
            .background(&t, json!({ "assistant_id": "job", "input": {} }))
            .await;
        let out = h.join(&t, &run).await;
        assert_eq!(out["log"], json!(["first", "second"]), "{out}");
    }
}
