//! The Studio mounted by the server: the page outside the API-key check (it holds
//! no data), its JSON API inside it, driving enabled and threads mapped to the
//! served graph that wrote them.

use crate::common;

use common::{Harness, read};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_studio_page_is_public_and_its_api_needs_the_key() {
    let h = Harness::start_with(|s| s.api_key("s3cret")).await;
    for path in ["/studio", "/studio/threads/t-1", "/studio/assets/studio.js"] {
        let r = h.http.get(h.url(path)).send().await.unwrap();
        assert_eq!(r.status(), 200, "{path}");
    }
    let (s, err) = h.get("/studio/api/info").await;
    assert_eq!(s, 401, "{err}");
    let (s, _) = h.get("/studio/api/threads").await;
    assert_eq!(s, 401);

    let get = |path: &str| {
        let request = h.http.get(h.url(path)).header("x-api-key", "s3cret");
        async move { read(request.send().await.unwrap()).await }
    };
    let (s, info) = get("/studio/api/info").await;
    assert_eq!(s, 200);
    assert_eq!(
        info,
        json!({ "mode": "served", "drive": true, "source": "server" })
    );

    let created = h
        .http
        .post(h.url("/threads"))
        .header("x-api-key", "s3cret")
        .json(&json!({ "thread_id": "t-1" }))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 200);
    let r = h
        .http
        .post(h.url("/threads/t-1/runs/wait"))
        .header("x-api-key", "s3cret")
        .json(&json!({ "assistant_id": "job", "input": { "delay_ms": 1 } }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);

    let (s, list) = get("/studio/api/threads?search=t-1").await;
    assert_eq!(s, 200, "{list}");
    assert_eq!(list["total"], 1);
    assert_eq!(list["threads"][0]["graph_id"], "job");
    assert_eq!(list["threads"][0]["status"], "finished");

    let (s, thread) = get("/studio/api/threads/t-1").await;
    assert_eq!(s, 200, "{thread}");
    assert_eq!(thread["graph_id"], "job");
    let nodes: Vec<&str> = thread["graph"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        nodes,
        ["__start__", "first", "second", "question", "__end__"]
    );
    let path: Vec<Value> = thread["path"].as_array().unwrap().clone();
    assert_eq!(
        path,
        [
            json!(["__start__", "first"]),
            json!(["first", "second"]),
            json!(["second", "question"]),
            json!(["question", "__end__"]),
        ]
    );
    let (s, err) = get("/studio/api/threads/nope").await;
    assert_eq!(
        (s, err),
        (404, json!({ "detail": "thread nope not found" }))
    );
}
