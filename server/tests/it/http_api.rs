//! Assistants, threads, state and history over HTTP; bad input is a 4xx with a
//! JSON error and writes nothing; the API key and the limits.

use crate::common;

use common::Harness;
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn assistants_describe_each_graph_its_shape_and_schemas() {
    let h = Harness::start().await;
    let (_, list) = h
        .post("/assistants/search", json!({ "limit": 10, "offset": 0 }))
        .await;
    let graphs: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["graph_id"].as_str().unwrap())
        .collect();
    assert_eq!(graphs, ["chat", "job", "nested", "research"]);
    let id = list[1]["assistant_id"].as_str().unwrap();
    let (status, by_id) = h.get(&format!("/assistants/{id}")).await;
    assert_eq!(status, 200);
    assert_eq!(by_id["graph_id"], "job");
    let (_, graph) = h.get("/assistants/job/graph").await;
    let nodes: Vec<&str> = graph["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    for n in ["__start__", "first", "second", "question", "__end__"] {
        assert!(nodes.contains(&n), "{n} in {nodes:?}");
    }
    assert!(
        graph["edges"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["source"] == "first" && e["target"] == "second")
    );
    let (_, schemas) = h.get("/assistants/job/schemas").await;
    assert_eq!(schemas["graph_id"], "job");
    assert_eq!(schemas["input_schema"]["additionalProperties"], false);
    assert!(
        schemas["state_schema"]["properties"]["log"].is_object(),
        "{schemas}"
    );
    let (status, err) = h.get("/assistants/nope").await;
    assert_eq!(status, 404);
    assert!(
        err["detail"]
            .as_str()
            .unwrap()
            .contains("serving graphs: chat, job, nested, research"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn threads_are_created_searched_patched_copied_and_deleted() {
    let h = Harness::start().await;
    let (s, t) = h
        .post(
            "/threads",
            json!({ "thread_id": "t-1", "metadata": { "user": "ada" } }),
        )
        .await;
    assert_eq!(s, 200);
    assert_eq!(t["status"], "idle");
    let (s, _) = h.post("/threads", json!({ "thread_id": "t-1" })).await;
    assert_eq!(s, 409);
    let (s, same) = h
        .post(
            "/threads",
            json!({ "thread_id": "t-1", "if_exists": "do_nothing" }),
        )
        .await;
    assert_eq!((s, same["metadata"]["user"].clone()), (200, json!("ada")));
    h.post(
        "/threads",
        json!({ "thread_id": "t-2", "metadata": { "user": "bob" } }),
    )
    .await;
    let (_, found) = h
        .post("/threads/search", json!({ "metadata": { "user": "ada" } }))
        .await;
    assert_eq!(found.as_array().unwrap().len(), 1);
    assert_eq!(found[0]["thread_id"], "t-1");
    let r = h
        .http
        .patch(h.url("/threads/t-1"))
        .json(&json!({ "metadata": { "plan": "pro" } }))
        .send()
        .await
        .unwrap();
    let patched: Value = r.json().await.unwrap();
    assert_eq!(patched["metadata"], json!({ "user": "ada", "plan": "pro" }));

    let (s, _) = h
        .post(
            "/threads/t-1/runs/wait",
            json!({ "assistant_id": "job", "input": { "delay_ms": 1 } }),
        )
        .await;
    assert_eq!(s, 200);
    let (_, found) = h
        .post("/threads/search", json!({ "values": { "count": 2 } }))
        .await;
    assert_eq!(found.as_array().unwrap().len(), 1);
    let (_, n) = h.post("/threads/count", json!({})).await;
    assert_eq!(n, 2);

    // update_state, then history, newest first.
    let (s, saved) = h
        .post(
            "/threads/t-1/state",
            json!({ "values": { "log": ["edited"] }, "as_node": "second" }),
        )
        .await;
    assert_eq!(s, 200, "{saved}");
    assert!(saved["checkpoint"]["checkpoint_id"].is_string());
    let (_, state) = h.get("/threads/t-1/state").await;
    assert_eq!(state["values"]["log"], json!(["first", "second", "edited"]));
    assert_eq!(state["next"], json!(["question"]));
    let (_, history) = h
        .post("/threads/t-1/history", json!({ "limit": 100 }))
        .await;
    let history = history.as_array().unwrap();
    assert!(history.len() >= 5, "{}", history.len());
    assert_eq!(
        history[0]["checkpoint"]["checkpoint_id"],
        state["checkpoint"]["checkpoint_id"]
    );
    let (_, older) = h
        .get(&format!(
            "/threads/t-1/state/{}",
            history[2]["checkpoint"]["checkpoint_id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(older["values"], history[2]["values"]);

    // A copy has the same state under a new id.
    let (_, copy) = h.post("/threads/t-1/copy", Value::Null).await;
    let copy_id = copy["thread_id"].as_str().unwrap();
    assert_ne!(copy_id, "t-1");
    let (_, copied) = h.get(&format!("/threads/{copy_id}/state")).await;
    assert_eq!(copied["values"], state["values"]);

    let r = h.http.delete(h.url("/threads/t-1")).send().await.unwrap();
    assert_eq!(r.status(), 204);
    assert_eq!(h.get("/threads/t-1").await.0, 404);
    assert_eq!(h.get("/threads/t-1/state").await.0, 404);
    let (_, copied_again) = h.get(&format!("/threads/{copy_id}/state")).await;
    assert_eq!(
        copied_again["values"], state["values"],
        "the copy outlives the original"
    );
}

/// The threads and runs stored, to show a refused request wrote nothing.
async fn stored(h: &Harness) -> (Value, Value) {
    let (_, threads) = h.post("/threads/search", json!({ "limit": 100 })).await;
    let (_, runs) = h.get("/threads/known/runs").await;
    (threads, runs)
}

/// By default an input key the state lacks is dropped, as LangGraph does, and named
/// in the run's metadata; a known key of the wrong type is still a 422.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_input_keys_are_dropped_and_named_in_the_runs_metadata() {
    let h = Harness::start().await;
    let t = h.thread().await;
    let (s, run) = h
        .post(
            &format!("/threads/{t}/runs"),
            json!({ "assistant_id": "job", "metadata": { "from": "test" },
                    "input": { "delay_ms": 1, "tools": [], "dealy_ms": 5 } }),
        )
        .await;
    assert_eq!(s, 200, "{run}");
    assert_eq!(
        run["metadata"],
        json!({ "from": "test", "dropped_input_keys": ["dealy_ms", "tools"] })
    );
    let out = h.join(&t, run["run_id"].as_str().unwrap()).await;
    assert_eq!(
        (out["delay_ms"].as_u64(), out["count"].as_u64()),
        (Some(1), Some(2)),
        "{out}"
    );
    let (_, again) = h.run(&t, run["run_id"].as_str().unwrap()).await;
    assert_eq!(
        again["metadata"]["dropped_input_keys"],
        json!(["dealy_ms", "tools"])
    );
    // Nothing dropped, nothing noted.
    let (_, clean) = h
        .post(
            &format!("/threads/{t}/runs"),
            json!({ "assistant_id": "job", "input": { "delay_ms": 1 } }),
        )
        .await;
    assert!(
        clean["metadata"].get("dropped_input_keys").is_none(),
        "{clean}"
    );
    h.join(&t, clean["run_id"].as_str().unwrap()).await;
    // A wrong type, and an unknown key in a state update or a command's update, stay 422s.
    for (path, body) in [
        (
            "runs",
            json!({ "assistant_id": "job", "input": { "tools": [], "delay_ms": "soon" } }),
        ),
        ("state", json!({ "values": { "dealy_ms": 5 } })),
        (
            "runs",
            json!({ "assistant_id": "job", "command": { "update": { "dealy_ms": 5 } } }),
        ),
    ] {
        let (s, err) = h.post(&format!("/threads/{t}/{path}"), body.clone()).await;
        assert_eq!(s, 422, "{body} → {err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_a_clear_4xx_and_write_nothing() {
    // Strict input: an unknown input key is refused too.
    let h = Harness::start_with(|s| s.body_limit(4096).strict_input()).await;
    h.post("/threads", json!({ "thread_id": "known" })).await;
    let before = stored(&h).await;
    let runs = "/threads/known/runs";

    let r = h
        .http
        .post(h.url(runs))
        .header("content-type", "application/json")
        .body("{\"assistant_id\": ")
        .send()
        .await
        .unwrap();
    let (s, err) = common::read(r).await;
    assert_eq!(s, 400);
    assert!(
        err["detail"].as_str().unwrap().contains("not valid JSON"),
        "{err}"
    );

    let cases = [
        (
            json!({ "assistant_id": "job", "input": { "dealy_ms": 5 } }),
            422,
            "$.input.dealy_ms",
        ),
        (
            json!({ "assistant_id": "job", "input": { "delay_ms": "soon" } }),
            422,
            "$.input.delay_ms",
        ),
        (
            json!({ "assistant_id": "job", "input": { "log": "not a list" } }),
            422,
            "$.input.log",
        ),
        (
            json!({ "assistant_id": "job", "input": [1, 2] }),
            422,
            "$.input",
        ),
        (
            json!({ "assistant_id": "job", "stream_mode": "everything" }),
            422,
            "$.stream_mode",
        ),
        (
            json!({ "assistant_id": "job", "interrupt_before": ["nowhere"] }),
            422,
            "$.interrupt_before",
        ),
        (
            json!({ "assistant_id": "job", "multitask_strategy": "shout" }),
            422,
            "$.multitask_strategy",
        ),
        (
            json!({ "assistant_id": "job", "command": { "resume": 1, "bogus": 2 } }),
            422,
            "$.command",
        ),
        (
            json!({ "assistant_id": "job", "command": { "resume": "yes" } }),
            409,
            "not waiting on an interrupt",
        ),
        (json!({ "assistant_id": "nope" }), 404, "assistant nope"),
        (json!({ "input": {} }), 422, "$.assistant_id"),
    ];
    for (body, status, needle) in cases {
        let (s, err) = h.post(runs, body.clone()).await;
        assert_eq!(s, status, "{body} → {err}");
        assert!(
            err.to_string().contains(needle),
            "{body} → {err} should mention {needle}"
        );
    }
    let (s, err) = h
        .post("/threads/missing/runs", json!({ "assistant_id": "job" }))
        .await;
    assert_eq!(s, 404, "{err}");
    assert_eq!(
        h.get("/threads/known/runs/00000000-0000-0000-0000-000000000000")
            .await
            .0,
        404
    );
    let (s, err) = h
        .post("/threads/known/state", json!({ "values": { "count": -1 } }))
        .await;
    assert!(s == 409 || s == 422, "{s} {err}");

    let big = "x".repeat(5000);
    let (s, err) = h
        .post(
            runs,
            json!({ "assistant_id": "job", "input": { "log": [big] } }),
        )
        .await;
    assert_eq!(s, 413, "{err}");
    let (s, _) = h.get("/no/such/route").await;
    assert_eq!(s, 404);
    assert_eq!(stored(&h).await, before, "nothing was written");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_key_guards_every_route_but_the_health_check() {
    let h = Harness::start_with(|s| s.api_key("s3cret")).await;
    assert_eq!(h.get("/ok").await, (200, json!({ "ok": true })));
    let (s, err) = h.post("/threads", json!({})).await;
    assert_eq!(s, 401);
    assert!(err["detail"].as_str().unwrap().contains("x-api-key"));
    let r = h
        .http
        .post(h.url("/threads"))
        .header("x-api-key", "wrong")
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    let r = h
        .http
        .post(h.url("/threads"))
        .header("x-api-key", "s3cret")
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = h
        .http
        .get(h.url("/assistants/job"))
        .bearer_auth("s3cret")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let (s, _) = h.get("/no/such/route").await;
    assert_eq!(s, 401, "unknown routes are not revealed without the key");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_per_thread_are_rate_limited() {
    let h = Harness::start_with(|s| s.runs_per_thread_per_minute(2)).await;
    let t = h.thread().await;
    for _ in 0..2 {
        let (s, _) = h
            .post(
                &format!("/threads/{t}/runs/wait"),
                json!({ "assistant_id": "job", "input": { "delay_ms": 1 } }),
            )
            .await;
        assert_eq!(s, 200);
    }
    let (s, err) = h
        .post(
            &format!("/threads/{t}/runs"),
            json!({ "assistant_id": "job", "input": {} }),
        )
        .await;
    assert_eq!(s, 429, "{err}");
    let other = h.thread().await;
    let (s, _) = h
        .post(
            &format!("/threads/{other}/runs/wait"),
            json!({ "assistant_id": "job", "input": { "delay_ms": 1 } }),
        )
        .await;
    assert_eq!(s, 200, "other threads are not limited");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_is_reachable_over_http() {
    let h = Harness::start().await;
    let r = h
        .http
        .put(h.url("/store/items"))
        .json(&json!({ "namespace": ["users", "ada"], "key": "prefs", "value": { "unit": "celsius" } }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let (s, item) = h.get("/store/items?namespace=users.ada&key=prefs").await;
    assert_eq!(s, 200);
    assert_eq!(item["value"], json!({ "unit": "celsius" }));
    let (_, hits) = h
        .post(
            "/store/items/search",
            json!({ "namespace_prefix": ["users"], "filter": { "unit": "celsius" } }),
        )
        .await;
    assert_eq!(hits["items"][0]["key"], "prefs");
    let (_, ns) = h.post("/store/namespaces", json!({})).await;
    assert_eq!(ns["namespaces"], json!([["users", "ada"]]));
    let (s, err) = h
        .http
        .put(h.url("/store/items"))
        .json(&json!({ "namespace": ["users"], "key": "k", "value": 3 }))
        .send()
        .await
        .map(|r| r.status().as_u16())
        .map(|s| (s, ()))
        .unwrap();
    assert_eq!(s, 422, "{err:?}");
    // A TTL no clock can hold, zero or negative is a 422 naming it; nothing is stored.
    for ttl in [json!(1e300), json!(0), json!(-5), json!("ten")] {
        let r = h
            .http
            .put(h.url("/store/items"))
            .json(&json!({ "namespace": ["users", "bob"], "key": "k", "value": {"a": 1}, "ttl": ttl }))
            .send()
            .await
            .unwrap();
        let (status, body) = common::read(r).await;
        assert_eq!(status, 422, "ttl {ttl}: {body}");
        assert_eq!(body["errors"][0]["path"], "$.ttl", "ttl {ttl}: {body}");
    }
    assert_eq!(
        h.get("/store/items?namespace=users.bob&key=k").await,
        (200, Value::Null)
    );
    // A semantic query on a store without an index is the caller's mistake.
    let (status, body) = h
        .post(
            "/store/items/search",
            json!({ "namespace_prefix": ["users"], "query": "weather" }),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["errors"][0]["path"], "$.query", "{body}");
    let r = h
        .http
        .delete(h.url("/store/items"))
        .json(&json!({ "namespace": ["users", "ada"], "key": "prefs" }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    assert_eq!(
        h.get("/store/items?namespace=users.ada&key=prefs").await,
        (200, Value::Null)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_messages_go_in_and_come_out_as_langgraph_clients_write_them() {
    let h = Harness::start().await;
    let t = h.thread().await;
    let (s, out) = h
        .post(&format!("/threads/{t}/runs/wait"), json!({ "assistant_id": "chat", "input": { "messages": [{ "type": "human", "content": "hi" }] } }))
        .await;
    assert_eq!(s, 200, "{out}");
    let messages = out["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(
        (messages[0]["type"].as_str(), messages[0].get("role")),
        (Some("human"), None)
    );
    assert_eq!(
        (
            messages[1]["type"].as_str(),
            messages[1]["content"].as_str()
        ),
        (Some("ai"), Some("echo: hi"))
    );
    // The role form and a bare string work too; a message of the wrong shape is a 422.
    let (s, out) = h
        .post(
            &format!("/threads/{t}/runs/wait"),
            json!({ "assistant_id": "chat", "input": { "messages": "again" } }),
        )
        .await;
    assert_eq!(s, 200, "{out}");
    assert_eq!(out["messages"][3]["content"], "echo: again");
    let (s, err) = h
        .post(
            &format!("/threads/{t}/runs/wait"),
            json!({ "assistant_id": "chat", "input": { "messages": [{ "type": "human" }] } }),
        )
        .await;
    assert_eq!(s, 422, "{err}");
    assert!(
        err["errors"][0]["path"]
            .as_str()
            .unwrap()
            .starts_with("$.input.messages"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_update_or_run_at_an_unknown_checkpoint_is_a_404_and_writes_nothing() {
    let h = Harness::start().await;
    let t = h.thread().await;
    h.finished_job(&t).await;
    let history = format!("/threads/{t}/history");
    let (_, before) = h.get(&history).await;
    for body in [
        json!({ "values": {}, "checkpoint_id": "no-such-checkpoint" }),
        json!({ "values": {}, "checkpoint": { "checkpoint_id": "no-such-checkpoint" } }),
    ] {
        let (status, err) = h.post(&format!("/threads/{t}/state"), body).await;
        assert_eq!(status, 404, "{err}");
        assert!(
            err["detail"]
                .as_str()
                .is_some_and(|d| d.contains("no-such-checkpoint")),
            "{err}"
        );
    }
    assert_eq!(h.get(&history).await.1, before);
    // A run from a checkpoint the thread does not have is refused, not queued to fail.
    for (path, body) in [
        (
            format!("/threads/{t}/runs/wait"),
            json!({ "assistant_id": "job", "checkpoint_id": "no-such-checkpoint" }),
        ),
        (
            format!("/threads/{t}/runs"),
            json!({ "assistant_id": "job", "checkpoint": { "checkpoint_id": "no-such-checkpoint" } }),
        ),
        (
            "/runs/wait".to_string(),
            json!({ "assistant_id": "job", "checkpoint_id": "no-such-checkpoint" }),
        ),
    ] {
        let (status, err) = h.post(&path, body).await;
        assert_eq!(status, 404, "{path}: {err}");
        assert!(
            err["detail"]
                .as_str()
                .is_some_and(|d| d.contains("no-such-checkpoint")),
            "{err}"
        );
    }
    let (_, runs) = h.get(&format!("/threads/{t}/runs")).await;
    assert_eq!(runs.as_array().map(Vec::len), Some(1), "{runs}");
    assert_eq!(h.get(&history).await.1, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thread_search_filters_sorts_selects_and_extracts() {
    let h = Harness::start().await;
    common::check_thread_search(&h).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn assistant_search_and_run_lists_honour_metadata_sort_and_select() {
    let h = Harness::start().await;
    let names = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|a| a["graph_id"].as_str().unwrap().to_string())
            .collect()
    };
    let (s, all) = h
        .post(
            "/assistants/search",
            json!({ "sort_by": "name", "sort_order": "asc", "limit": 100 }),
        )
        .await;
    assert_eq!(s, 200, "{all}");
    assert_eq!(names(&all), ["chat", "job", "nested", "research"]);
    let (_, desc) = h
        .post(
            "/assistants/search",
            json!({ "sort_by": "graph_id", "sort_order": "desc" }),
        )
        .await;
    assert_eq!(names(&desc), ["research", "nested", "job", "chat"]);
    let (_, system) = h
        .post(
            "/assistants/search",
            json!({ "metadata": { "created_by": "system" } }),
        )
        .await;
    assert_eq!(system.as_array().map(Vec::len), Some(4));
    let (_, none) = h
        .post(
            "/assistants/search",
            json!({ "metadata": { "created_by": "someone" } }),
        )
        .await;
    assert_eq!(none, json!([]));
    let (_, picked) = h
        .post(
            "/assistants/search",
            json!({ "graph_id": "job", "select": ["graph_id", "version"] }),
        )
        .await;
    assert_eq!(picked, json!([{ "graph_id": "job", "version": 1 }]));
    for body in [
        json!({ "select": ["secrets"] }),
        json!({ "sort_by": "colour" }),
        json!({ "graph": "job" }),
    ] {
        let (s, err) = h.post("/assistants/search", body.clone()).await;
        assert_eq!(s, 422, "{body} → {err}");
    }

    // A thread's runs: `select` once per field, as the SDKs send it.
    let t = h.thread().await;
    let run = h.finished_job(&t).await;
    let (s, runs) = h
        .get(&format!("/threads/{t}/runs?select=run_id&select=status"))
        .await;
    assert_eq!(s, 200, "{runs}");
    assert_eq!(runs, json!([{ "run_id": run, "status": "success" }]));
    let (s, err) = h.get(&format!("/threads/{t}/runs?select=secrets")).await;
    assert_eq!(s, 422, "{err}");
    assert_eq!(err["errors"][0]["path"], "query.select", "{err}");
}

/// The remaining bodies name every field the SDKs send: history `select` picks
/// fields; what is not served (`checkpoint` in history, `ttl` on a thread update) and
/// any field no SDK sends are 422s naming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_state_thread_and_store_bodies_honour_or_refuse_every_field() {
    let h = Harness::start().await;
    let t = h.thread().await;
    h.finished_job(&t).await;
    let (s, states) = h
        .post(
            &format!("/threads/{t}/history"),
            json!({ "limit": 2, "select": ["values", "next"] }),
        )
        .await;
    assert_eq!(s, 200, "{states}");
    let first = states[0].as_object().unwrap();
    assert_eq!(
        first.keys().collect::<Vec<_>>(),
        ["next", "values"],
        "{states}"
    );
    assert_eq!(first["values"]["count"], 2);
    // RemoteGraph's `checkpoint`: the thread, or one checkpoint of it.
    let (_, all) = h
        .post(
            &format!("/threads/{t}/history"),
            json!({ "checkpoint": { "thread_id": t } }),
        )
        .await;
    assert!(all.as_array().unwrap().len() >= 3, "{all}");
    let older = all[1]["checkpoint"]["checkpoint_id"].clone();
    let (_, one) = h
        .post(&format!("/threads/{t}/history"),
              json!({ "checkpoint": { "thread_id": t, "checkpoint_ns": "", "checkpoint_id": older } }))
        .await;
    assert_eq!(one.as_array().map(Vec::len), Some(1), "{one}");
    assert_eq!(one[0]["checkpoint"]["checkpoint_id"], older);
    let cases = [
        (
            format!("/threads/{t}/history"),
            json!({ "checkpoint": { "checkpoint_ns": "inner" } }),
            "$.checkpoint.checkpoint_ns",
        ),
        (
            format!("/threads/{t}/history"),
            json!({ "checkpoint": { "thread_id": "other" } }),
            "$.checkpoint.thread_id",
        ),
        (
            format!("/threads/{t}/history"),
            json!({ "select": ["secrets"] }),
            "$.select",
        ),
        (
            format!("/threads/{t}/history"),
            json!({ "limt": 2 }),
            "limt",
        ),
        (
            format!("/threads/{t}/state"),
            json!({ "values": { "count": 1 }, "as_nod": "first" }),
            "as_nod",
        ),
        (
            "/store/items/search".to_string(),
            json!({ "namespace_prefix": ["a"], "filtr": {} }),
            "filtr",
        ),
        (
            "/store/namespaces".to_string(),
            json!({ "prefix": ["a"], "depth": 2 }),
            "depth",
        ),
        (
            "/threads".to_string(),
            json!({ "thread_idd": "typo" }),
            "thread_idd",
        ),
    ];
    for (path, body, needle) in cases {
        let (s, err) = h.post(&path, body.clone()).await;
        assert_eq!(s, 422, "{path} {body} → {err}");
        assert!(
            err.to_string().contains(needle),
            "{path} {body} → {err} should name {needle}"
        );
    }
    let r = h
        .http
        .patch(h.url(&format!("/threads/{t}")))
        .json(&json!({ "metadata": { "a": 1 }, "ttl": { "ttl": -5 } }))
        .send()
        .await
        .unwrap();
    let (s, err) = common::read(r).await;
    assert_eq!(s, 422, "{err}");
    assert_eq!(err["errors"][0]["path"], "$.ttl.ttl", "{err}");
    let (_, thread) = h.get(&format!("/threads/{t}")).await;
    assert!(
        thread["metadata"].get("a").is_none(),
        "a refused patch wrote nothing: {thread}"
    );
    // Store reads take `refresh_ttl`; a parameter no SDK sends is a 422.
    let r = h
        .http
        .put(h.url("/store/items"))
        .json(
            &json!({ "namespace": ["users", "ada"], "key": "prefs", "value": { "tone": "brief" } }),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let (s, item) = h
        .get("/store/items?namespace=users.ada&key=prefs&refresh_ttl=true")
        .await;
    assert_eq!(
        (s, &item["value"]["tone"]),
        (200, &json!("brief")),
        "{item}"
    );
    let (s, err) = h
        .get("/store/items?namespace=users.ada&key=prefs&refresh=1")
        .await;
    assert_eq!(s, 422, "{err}");
}
