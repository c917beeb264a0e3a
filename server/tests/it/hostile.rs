//! Hostile input the same on both backends: a NUL character anywhere a client can
//! put one (an id, metadata, input, a store key or namespace, the path, the query)
//! is a 422 naming where it is, and nothing is written (PostgreSQL cannot store a
//! NUL in text or JSON; before, each such request was a 500 there). `config` and
//! `checkpoint` of the wrong JSON type are 422s too, not ignored.

use crate::common;
use crate::pg;

use common::{Harness, read};
use serde_json::{Value, json};

/// Every way in for a NUL, against `h`; asserts the 422s and that nothing was written.
async fn nul_characters_are_refused_everywhere(h: &Harness) {
    let t = h.thread().await;
    let bodies = [
        ("/threads", json!({ "thread_id": "a\u{0}b" }), "$.thread_id"),
        (
            "/threads",
            json!({ "metadata": { "owner": "ada\u{0}" } }),
            "$.metadata.owner",
        ),
        (
            "/threads",
            json!({ "metadata": { "tags": ["ok", "bad\u{0}"] } }),
            "$.metadata.tags[1]",
        ),
        (
            &format!("/threads/{t}/runs/wait") as &str,
            json!({ "assistant_id": "research", "input": { "topic": "Rust\u{0}" } }),
            "$.input.topic",
        ),
        (
            "/threads/search",
            json!({ "metadata": { "owner": "\u{0}" } }),
            "$.metadata.owner",
        ),
    ];
    for (path, body, field) in bodies {
        let (status, err) = h.post(path, body.clone()).await;
        assert_eq!(status, 422, "{path} {body}: {err}");
        assert_eq!(err["errors"][0]["path"], field, "{path} {body}: {err}");
        assert!(
            err["detail"].as_str().is_some_and(|d| d.contains("NUL")),
            "{err}"
        );
    }
    // A key holding a NUL is named too.
    let (status, err) = h
        .post("/threads", json!({ "metadata": { "a\u{0}": 1 } }))
        .await;
    assert_eq!(status, 422, "{err}");
    assert!(
        err["errors"][0]["path"]
            .as_str()
            .is_some_and(|p| p.starts_with("$.metadata.a")),
        "{err}"
    );
    for (item, field) in [
        (
            json!({ "namespace": ["docs\u{0}"], "key": "k", "value": {} }),
            "$.namespace[0]",
        ),
        (
            json!({ "namespace": ["docs"], "key": "k\u{0}", "value": {} }),
            "$.key",
        ),
        (
            json!({ "namespace": ["docs"], "key": "k", "value": { "text": "\u{0}" } }),
            "$.value.text",
        ),
    ] {
        let r = h
            .http
            .put(h.url("/store/items"))
            .json(&item)
            .send()
            .await
            .unwrap();
        let (status, err) = read(r).await;
        assert_eq!(status, 422, "{item}: {err}");
        assert_eq!(err["errors"][0]["path"], field, "{item}: {err}");
    }
    for (path, field) in [
        ("/threads/a%00b".to_string(), "path"),
        (format!("/threads/{t}/runs/x%00y"), "path"),
        (
            "/store/items?namespace=docs&key=k%00".to_string(),
            "query.key",
        ),
    ] {
        let (status, err) = h.get(&path).await;
        assert_eq!(status, 422, "{path}: {err}");
        assert_eq!(err["errors"][0]["path"], field, "{path}: {err}");
    }

    // Nothing was written: one thread (the one made here), no run, no item.
    let (_, threads) = h.post("/threads/search", json!({ "limit": 100 })).await;
    let ids: Vec<&str> = threads
        .as_array()
        .expect("threads")
        .iter()
        .filter_map(|t| t["thread_id"].as_str())
        .collect();
    assert_eq!(ids, [t.as_str()], "{threads}");
    let (_, runs) = h.get(&format!("/threads/{t}/runs")).await;
    assert_eq!(runs, json!([]));
    let (_, items) = h
        .post(
            "/store/items/search",
            json!({ "namespace_prefix": ["docs"] }),
        )
        .await;
    assert_eq!(items["items"], Value::Array(Vec::new()), "{items}");
}

/// `config` must be an object, `checkpoint` an object whose id is a string.
async fn wrong_json_types_are_refused(h: &Harness) {
    let t = h.thread().await;
    let runs = format!("/threads/{t}/runs");
    for (body, field) in [
        (json!({ "assistant_id": "job", "config": 5 }), "$.config"),
        (
            json!({ "assistant_id": "job", "config": "fast" }),
            "$.config",
        ),
        (
            json!({ "assistant_id": "job", "checkpoint": "abc" }),
            "$.checkpoint",
        ),
        (
            json!({ "assistant_id": "job", "checkpoint": { "checkpoint_id": 5 } }),
            "$.checkpoint.checkpoint_id",
        ),
    ] {
        let (status, err) = h.post(&runs, body.clone()).await;
        assert_eq!(status, 422, "{body}: {err}");
        assert_eq!(err["errors"][0]["path"], field, "{body}: {err}");
    }
    let (status, err) = h
        .post(
            &format!("/threads/{t}/state"),
            json!({ "values": {}, "checkpoint": true }),
        )
        .await;
    assert_eq!(status, 422, "{err}");
    assert_eq!(err["errors"][0]["path"], "$.checkpoint", "{err}");
    let (_, listed) = h.get(&runs).await;
    assert_eq!(listed, json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_input_is_refused_on_sqlite() {
    let h = Harness::start().await;
    nul_characters_are_refused_everywhere(&h).await;
    wrong_json_types_are_refused(&h).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_input_is_refused_on_postgres() {
    let Some(url) = pg::postgres_url("hostile_input_is_refused_on_postgres") else {
        return;
    };
    let schema = pg::fresh_schema("sg_srv_nul");
    let h = Harness::bind(pg::server(&url, &schema)).await;
    nul_characters_are_refused_everywhere(&h).await;
    wrong_json_types_are_refused(&h).await;
    h.running.shutdown().await.expect("a clean shutdown");
    pg::drop_schema(&url, &schema).await;
}
