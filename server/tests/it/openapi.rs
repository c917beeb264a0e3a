//! The OpenAPI document against the server: every operation it lists is called,
//! each answer's status is one it documents and each JSON body validates against
//! the schema it gives for that status; routes it does not list are refused.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::common::Harness;

/// A client that checks each answer against the document.
struct Checked<'a> {
    h: &'a Harness,
    doc: Value,
    called: BTreeSet<(String, String)>,
}

impl Checked<'_> {
    /// Calls `method` on `path` (an instance of `template`); the answer's status and
    /// body, checked.
    async fn call(
        &mut self,
        method: &str,
        template: &str,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let url = self.h.url(path);
        let mut req = match method {
            "get" => self.h.http.get(url),
            "post" => self.h.http.post(url),
            "put" => self.h.http.put(url),
            "patch" => self.h.http.patch(url),
            "delete" => self.h.http.delete(url),
            other => panic!("no method {other}"),
        };
        if let Some(b) = body {
            req = req.json(&b);
        }
        if template.ends_with("/stream") && method == "get" {
            req = req.header("Last-Event-ID", "-1");
        }
        let r = req.send().await.expect("a response");
        let status = r.status().as_u16();
        let kind = r
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let op = &self.doc["paths"][template][method];
        assert!(op.is_object(), "{method} {template} is not in the document");
        self.called
            .insert((method.to_string(), template.to_string()));
        let answer = &op["responses"][status.to_string()];
        assert!(
            answer.is_object(),
            "{method} {path}: status {status} is not documented ({:?})",
            op["responses"]
                .as_object()
                .map(|o| o.keys().collect::<Vec<_>>())
        );
        if kind.starts_with("text/event-stream") {
            assert!(
                answer["content"]["text/event-stream"].is_object(),
                "{method} {path}"
            );
            // A thread's stream stays open: the headers are the check.
            if template.starts_with("/threads/{thread_id}/stream") {
                return (status, Value::Null);
            }
            let _ = r.bytes().await.expect("the stream");
            return (status, Value::Null);
        }
        let text = r.text().await.expect("a body");
        let Some(schema) = answer["content"]["application/json"]["schema"].as_object() else {
            assert!(text.is_empty(), "{method} {path}: undocumented body {text}");
            return (status, Value::Null);
        };
        let value: Value = serde_json::from_str(&text).expect("a JSON body");
        let errors = mismatches(&self.doc, &Value::Object(schema.clone()), &value);
        assert!(
            errors.is_empty(),
            "{method} {path} ({status}) does not match its schema: {errors:?}\n{value}"
        );
        (status, value)
    }
}

/// How `value` fails `schema` (which may refer to the document's components).
fn mismatches(doc: &Value, schema: &Value, value: &Value) -> Vec<String> {
    let mut root = schema.clone();
    root["$schema"] = json!("https://json-schema.org/draft/2020-12/schema");
    root["components"] = doc["components"].clone();
    let validator = jsonschema::validator_for(&root).expect("a valid schema");
    validator
        .iter_errors(value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

fn documented(doc: &Value) -> BTreeSet<(String, String)> {
    let mut all = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in item.as_object().expect("an item").keys() {
            all.insert((method.clone(), path.clone()));
        }
    }
    all
}

#[tokio::test]
async fn every_documented_operation_answers_as_documented() {
    let h = Harness::start().await;
    let (status, doc) = h.get("/openapi.json").await;
    assert_eq!(status, 200);
    assert_eq!(doc["openapi"], "3.1.0");
    let mut c = Checked {
        h: &h,
        doc,
        called: BTreeSet::new(),
    };
    server_and_assistants(&mut c).await;
    let t = threads(&mut c).await;
    runs(&mut c, &t).await;
    state(&mut c).await;
    stateless(&mut c).await;
    store(&mut c).await;
    crons(&mut c).await;
    assistant_edits(&mut c).await;
    let (status, _) = c
        .call(
            "get",
            "/assistants/{assistant_id}/subgraphs",
            "/assistants/nested/subgraphs?recurse=true",
            None,
        )
        .await;
    assert_eq!(status, 200);
    let (status, _) = c
        .call(
            "get",
            "/assistants/{assistant_id}/subgraphs/{namespace}",
            "/assistants/nested/subgraphs/inner",
            None,
        )
        .await;
    assert_eq!(status, 200);
    let (status, pruned) = c
        .call(
            "post",
            "/threads/prune",
            "/threads/prune",
            Some(json!({ "thread_ids": ["none"] })),
        )
        .await;
    assert_eq!((status, pruned), (200, json!({ "pruned_count": 0 })));
    // The check refuses what does not match.
    let thread = json!({ "$ref": "#/components/schemas/Thread" });
    let bad = json!({ "thread_id": 7, "status": "idle" });
    assert!(mismatches(&c.doc, &thread, &bad).len() >= 2);
    let missing: Vec<_> = documented(&c.doc).difference(&c.called).cloned().collect();
    assert!(missing.is_empty(), "not exercised: {missing:?}");

    // What the document does not list is refused with a JSON error.
    for (method, path) in [("put", "/threads"), ("get", "/runs/cancel")] {
        let r = h
            .http
            .request(
                method.to_uppercase().parse().expect("a method"),
                h.url(path),
            )
            .send()
            .await
            .expect("a response");
        assert_eq!(r.status(), 405, "{method} {path}");
    }
    let (status, body) = h.get("/no/such/route").await;
    assert_eq!(status, 404);
    assert!(body["detail"].is_string(), "{body}");
    // The page lists every operation.
    let page = h
        .http
        .get(h.url("/docs"))
        .send()
        .await
        .expect("a response")
        .text()
        .await
        .expect("a page");
    for (method, path) in documented(&c.doc) {
        let row = format!(
            "<code>{}</code></td><td><code>{}</code>",
            method.to_uppercase(),
            path
        );
        assert!(page.contains(&row), "/docs misses {method} {path}");
    }
}

async fn server_and_assistants(c: &mut Checked<'_>) {
    c.call("get", "/ok", "/ok", None).await;
    c.call("get", "/info", "/info", None).await;
    c.call(
        "post",
        "/assistants/search",
        "/assistants/search",
        Some(json!({})),
    )
    .await;
    c.call(
        "post",
        "/assistants/count",
        "/assistants/count",
        Some(json!({})),
    )
    .await;
    for (t, p) in [
        ("/assistants/{assistant_id}", "/assistants/job"),
        (
            "/assistants/{assistant_id}/graph",
            "/assistants/nested/graph",
        ),
        (
            "/assistants/{assistant_id}/schemas",
            "/assistants/job/schemas",
        ),
    ] {
        c.call("get", t, p, None).await;
    }
    let (status, _) = c
        .call(
            "get",
            "/assistants/{assistant_id}",
            "/assistants/none",
            None,
        )
        .await;
    assert_eq!(status, 404);
}

/// Thread operations; a thread for the runs.
async fn threads(c: &mut Checked<'_>) -> String {
    let (_, t) = c
        .call(
            "post",
            "/threads",
            "/threads",
            Some(json!({ "metadata": { "k": 1 } })),
        )
        .await;
    let t = t["thread_id"].as_str().expect("an id").to_string();
    let (status, e) = c
        .call(
            "post",
            "/threads",
            "/threads",
            Some(json!({ "if_exists": "x" })),
        )
        .await;
    assert_eq!(status, 422, "{e}");
    let one = format!("/threads/{t}");
    c.call("get", "/threads/{thread_id}", &one, None).await;
    c.call(
        "patch",
        "/threads/{thread_id}",
        &one,
        Some(json!({ "metadata": { "k": 2 } })),
    )
    .await;
    c.call(
        "post",
        "/threads/search",
        "/threads/search",
        Some(json!({ "limit": 5 })),
    )
    .await;
    c.call("post", "/threads/count", "/threads/count", Some(json!({})))
        .await;
    let (_, copy) = c
        .call(
            "post",
            "/threads/{thread_id}/copy",
            &format!("{one}/copy"),
            None,
        )
        .await;
    let copy = format!("/threads/{}", copy["thread_id"].as_str().expect("an id"));
    c.call("delete", "/threads/{thread_id}", &copy, None).await;
    let (status, _) = c.call("get", "/threads/{thread_id}", &copy, None).await;
    assert_eq!(status, 404);
    t
}

async fn runs(c: &mut Checked<'_>, t: &str) {
    let job = json!({ "assistant_id": "job", "input": {} });
    let base = format!("/threads/{t}/runs");
    c.call(
        "post",
        "/threads/{thread_id}/runs/wait",
        &format!("{base}/wait"),
        Some(job.clone()),
    )
    .await;
    let (_, run) = c
        .call(
            "post",
            "/threads/{thread_id}/runs",
            &base,
            Some(job.clone()),
        )
        .await;
    let r = run["run_id"].as_str().expect("a run id").to_string();
    let one = format!("{base}/{r}");
    c.call(
        "get",
        "/threads/{thread_id}/runs/{run_id}/join",
        &format!("{one}/join"),
        None,
    )
    .await;
    c.call("get", "/threads/{thread_id}/runs", &base, None)
        .await;
    c.call("get", "/threads/{thread_id}/runs/{run_id}", &one, None)
        .await;
    c.call(
        "get",
        "/threads/{thread_id}/runs/{run_id}/stream",
        &format!("{one}/stream"),
        None,
    )
    .await;
    c.call(
        "get",
        "/runs/{run_id}/stream",
        &format!("/runs/{r}/stream"),
        None,
    )
    .await;
    c.call(
        "post",
        "/threads/{thread_id}/runs/stream",
        &format!("{base}/stream"),
        Some(job),
    )
    .await;
    c.call(
        "post",
        "/threads/{thread_id}/runs/{run_id}/cancel",
        &format!("{one}/cancel?wait=true"),
        None,
    )
    .await;
    c.call("delete", "/threads/{thread_id}/runs/{run_id}", &one, None)
        .await;
    c.call(
        "get",
        "/threads/{thread_id}/stream",
        &format!("/threads/{t}/stream"),
        None,
    )
    .await;
}

/// State reads and writes of a nested graph paused inside its subgraph.
async fn state(c: &mut Checked<'_>) {
    let (_, t) = c
        .call("post", "/threads", "/threads", Some(json!({})))
        .await;
    let t = t["thread_id"].as_str().expect("an id").to_string();
    let asked = json!({ "assistant_id": "nested", "input": { "ask": true } });
    let (_, out) = c
        .call(
            "post",
            "/threads/{thread_id}/runs/wait",
            &format!("/threads/{t}/runs/wait"),
            Some(asked),
        )
        .await;
    assert!(out["__interrupt__"].is_array(), "{out}");
    let (_, thread) = c
        .call(
            "get",
            "/threads/{thread_id}",
            &format!("/threads/{t}"),
            None,
        )
        .await;
    assert_eq!(thread["status"], "interrupted");
    let at = format!("/threads/{t}/state");
    let (_, s) = c
        .call(
            "get",
            "/threads/{thread_id}/state",
            &format!("{at}?subgraphs=true"),
            None,
        )
        .await;
    assert!(
        s["tasks"][0]["state"].is_object(),
        "the subgraph's state: {s}"
    );
    let id = s["checkpoint"]["checkpoint_id"]
        .as_str()
        .expect("an id")
        .to_string();
    c.call(
        "get",
        "/threads/{thread_id}/state/{checkpoint_id}",
        &format!("{at}/{id}"),
        None,
    )
    .await;
    let by_body = json!({ "checkpoint": { "checkpoint_id": id }, "subgraphs": true });
    c.call(
        "post",
        "/threads/{thread_id}/state/checkpoint",
        &format!("{at}/checkpoint"),
        Some(by_body),
    )
    .await;
    c.call(
        "post",
        "/threads/{thread_id}/state",
        &at,
        Some(json!({ "values": { "delay_ms": 1 } })),
    )
    .await;
    let history = format!("/threads/{t}/history");
    c.call("get", "/threads/{thread_id}/history", &history, None)
        .await;
    c.call(
        "post",
        "/threads/{thread_id}/history",
        &history,
        Some(json!({ "limit": 2 })),
    )
    .await;
}

async fn stateless(c: &mut Checked<'_>) {
    let job = json!({ "assistant_id": "job", "input": {}, "on_completion": "keep" });
    let (_, run) = c.call("post", "/runs", "/runs", Some(job.clone())).await;
    c.call("post", "/runs/wait", "/runs/wait", Some(job.clone()))
        .await;
    c.call("post", "/runs/stream", "/runs/stream", Some(job.clone()))
        .await;
    c.call(
        "post",
        "/runs/batch",
        "/runs/batch",
        Some(json!([job.clone(), job])),
    )
    .await;
    let cancel = json!({ "run_ids": [run["run_id"]] });
    c.call("post", "/runs/cancel", "/runs/cancel", Some(cancel))
        .await;
}

async fn store(c: &mut Checked<'_>) {
    let item = json!({ "namespace": ["docs", "a"], "key": "k", "value": { "x": 1 } });
    c.call("put", "/store/items", "/store/items", Some(item))
        .await;
    let (_, got) = c
        .call(
            "get",
            "/store/items",
            "/store/items?namespace=docs.a&key=k",
            None,
        )
        .await;
    assert_eq!(got["value"], json!({ "x": 1 }));
    c.call(
        "post",
        "/store/items/search",
        "/store/items/search",
        Some(json!({ "namespace_prefix": ["docs"] })),
    )
    .await;
    c.call(
        "post",
        "/store/namespaces",
        "/store/namespaces",
        Some(json!({})),
    )
    .await;
    c.call(
        "delete",
        "/store/items",
        "/store/items",
        Some(json!({ "namespace": ["docs", "a"], "key": "k" })),
    )
    .await;
    let (_, gone) = c
        .call(
            "get",
            "/store/items",
            "/store/items?namespace=docs.a&key=k",
            None,
        )
        .await;
    assert!(gone.is_null(), "{gone}");
}

async fn crons(c: &mut Checked<'_>) {
    let (_, t) = c
        .call("post", "/threads", "/threads", Some(json!({})))
        .await;
    let t = t["thread_id"].as_str().expect("a thread id").to_string();
    let daily = json!({ "assistant_id": "job", "schedule": "0 9 * * *", "input": {} });
    let (status, made) = c
        .call("post", "/runs/crons", "/runs/crons", Some(daily.clone()))
        .await;
    assert_eq!(status, 200, "{made}");
    let id = made["cron_id"].as_str().expect("a cron id").to_string();
    let bad = json!({ "assistant_id": "job", "schedule": "sometimes" });
    assert_eq!(
        c.call("post", "/runs/crons", "/runs/crons", Some(bad))
            .await
            .0,
        422
    );
    let for_thread = format!("/threads/{t}/runs/crons");
    let (status, _) = c
        .call(
            "post",
            "/threads/{thread_id}/runs/crons",
            &for_thread,
            Some(daily),
        )
        .await;
    assert_eq!(status, 200);
    let one = format!("/runs/crons/{id}");
    assert_eq!(
        c.call("get", "/runs/crons/{cron_id}", &one, None).await.0,
        200
    );
    let paused = json!({ "enabled": false });
    let (status, cron) = c
        .call("patch", "/runs/crons/{cron_id}", &one, Some(paused))
        .await;
    assert_eq!((status, &cron["enabled"]), (200, &json!(false)));
    let (status, found) = c
        .call(
            "post",
            "/runs/crons/search",
            "/runs/crons/search",
            Some(json!({})),
        )
        .await;
    assert_eq!((status, found.as_array().map(Vec::len)), (200, Some(2)));
    let (_, n) = c
        .call(
            "post",
            "/runs/crons/count",
            "/runs/crons/count",
            Some(json!({ "enabled": false })),
        )
        .await;
    assert_eq!(n, 1);
    assert_eq!(
        c.call("delete", "/runs/crons/{cron_id}", &one, None)
            .await
            .0,
        204
    );
    assert_eq!(
        c.call("get", "/runs/crons/{cron_id}", &one, None).await.0,
        404
    );
}

async fn assistant_edits(c: &mut Checked<'_>) {
    let made = json!({ "graph_id": "job", "config": { "recursion_limit": 5 } });
    let (status, a) = c
        .call("post", "/assistants", "/assistants", Some(made))
        .await;
    assert_eq!(status, 200, "{a}");
    let id = a["assistant_id"].as_str().expect("an id").to_string();
    let bad = json!({ "graph_id": "job", "config": { "bogus": true } });
    assert_eq!(
        c.call("post", "/assistants", "/assistants", Some(bad))
            .await
            .0,
        422
    );
    let one = format!("/assistants/{id}");
    let (status, v2) = c
        .call(
            "patch",
            "/assistants/{assistant_id}",
            &one,
            Some(json!({ "name": "five" })),
        )
        .await;
    assert_eq!((status, &v2["version"]), (200, &json!(2)));
    let versions = format!("/assistants/{id}/versions");
    let (_, all) = c
        .call(
            "post",
            "/assistants/{assistant_id}/versions",
            &versions,
            Some(json!({})),
        )
        .await;
    assert_eq!(all.as_array().map(Vec::len), Some(2));
    let latest = format!("/assistants/{id}/latest");
    let (status, _) = c
        .call(
            "post",
            "/assistants/{assistant_id}/latest",
            &latest,
            Some(json!({ "version": 1 })),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        c.call("delete", "/assistants/{assistant_id}", &one, None)
            .await
            .0,
        204
    );
    assert_eq!(
        c.call("delete", "/assistants/{assistant_id}", &one, None)
            .await
            .0,
        404
    );
}
