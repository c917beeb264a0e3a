//! A run's options are honoured or refused, never accepted and dropped:
//! `config.recursion_limit`, `config.configurable` and the run's `context` (which
//! reach the nodes), `durability` (and its old spelling `checkpoint_during`),
//! `config.tags`/`metadata` (in the checkpoints' metadata).

use crate::common::Harness;
use serde_json::{Value, json};
use stategraph::prelude::*;

/// What a node saw of its run besides the state.
#[derive(GraphState, schemars::JsonSchema, Clone, Debug, Default)]
pub struct Seen {
    /// `configurable.model`.
    pub model: Option<String>,
    /// The context, as JSON or typed.
    pub caller: Option<String>,
}

/// A typed run context.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Caller {
    user_id: String,
}

#[node]
async fn look(_: &Seen, ctx: &NodeContext) -> Result<SeenUpdate, NodeError> {
    let model = ctx.configurable().get("model").and_then(Value::as_str);
    let caller = match ctx.context::<Caller>() {
        Ok(c) => Some(format!("typed {}", c.user_id)),
        Err(_) => ctx.context::<Value>().ok().map(|v| format!("json {v}")),
    };
    Ok(Seen::update()
        .model(model.map(str::to_string))
        .caller(caller))
}

fn seen_graph() -> StateGraph<Seen> {
    let mut g = StateGraph::<Seen>::new();
    g.add_node(look).add_edge(START, look);
    g
}

async fn start() -> Harness {
    Harness::start_with(|s| {
        s.graph("seen", seen_graph())
            .graph_with_context::<Seen, Caller>("typed", seen_graph(), CompileOptions::new())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configurable_values_and_the_context_reach_the_nodes() {
    let h = start().await;
    let t = h.thread().await;
    let (s, out) = h
        .post(
            &format!("/threads/{t}/runs/wait"),
            json!({ "assistant_id": "seen", "input": {}, "config": { "configurable": { "model": "small" } },
                    "context": { "user_id": "ada" } }),
        )
        .await;
    assert_eq!(s, 200, "{out}");
    assert_eq!(out["model"], "small", "{out}");
    assert_eq!(out["caller"], r#"json {"user_id":"ada"}"#);
    // A graph with a context type: decoded into it, its schema published.
    let t = h.thread().await;
    let (s, out) = h
        .post(
            &format!("/threads/{t}/runs/wait"),
            json!({ "assistant_id": "typed", "input": {}, "context": { "user_id": "ada" } }),
        )
        .await;
    assert_eq!(s, 200, "{out}");
    assert_eq!(out["caller"], "typed ada");
    let (_, schemas) = h.get("/assistants/typed/schemas").await;
    assert!(
        schemas["context_schema"]["properties"]["user_id"].is_object(),
        "{schemas}"
    );
    let (_, schemas) = h.get("/assistants/seen/schemas").await;
    assert!(schemas["context_schema"].is_null(), "{schemas}");
    // A context that does not decode is a 422 naming it, and nothing is queued.
    let (s, err) = h
        .post(
            &format!("/threads/{t}/runs"),
            json!({ "assistant_id": "typed", "input": {}, "context": { "user_id": 5 } }),
        )
        .await;
    assert_eq!(s, 422, "{err}");
    assert_eq!(err["errors"][0]["path"], "$.context", "{err}");
    let (_, runs) = h.get(&format!("/threads/{t}/runs")).await;
    assert_eq!(runs.as_array().map(Vec::len), Some(1), "{runs}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recursion_limit_stops_the_run_with_the_recursion_error() {
    let h = start().await;
    let t = h.thread().await;
    let (s, run) = h
        .post(
            &format!("/threads/{t}/runs"),
            json!({ "assistant_id": "job", "input": {}, "config": { "recursion_limit": 2 } }),
        )
        .await;
    assert_eq!(s, 200, "{run}");
    let out = h.join(&t, run["run_id"].as_str().unwrap()).await;
    let (_, run) = h.run(&t, run["run_id"].as_str().unwrap()).await;
    assert_eq!(run["status"], "error", "{run} {out}");
    assert!(out.to_string().contains("recursion limit"), "{out}");
    // The same graph within its limit runs to the end.
    let (_, out) = h
        .post(
            &format!("/threads/{}/runs/wait", h.thread().await),
            json!({ "assistant_id": "job", "input": {}, "config": { "recursion_limit": 3 } }),
        )
        .await;
    assert_eq!(out["count"], 2, "{out}");
}

/// Checkpoints of a thread after one run of `job` with `body`'s options.
async fn checkpoints_after(h: &Harness, options: Value) -> usize {
    let t = h.thread().await;
    let mut body = json!({ "assistant_id": "job", "input": {} });
    body.as_object_mut()
        .unwrap()
        .extend(options.as_object().unwrap().clone());
    let (s, out) = h.post(&format!("/threads/{t}/runs/wait"), body).await;
    assert_eq!(s, 200, "{out}");
    assert_eq!(out["count"], 2, "{out}");
    let (_, history) = h
        .post(&format!("/threads/{t}/history"), json!({ "limit": 100 }))
        .await;
    history.as_array().map_or(0, Vec::len)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn durability_exit_leaves_one_checkpoint_per_run() {
    let h = start().await;
    let every_step = checkpoints_after(&h, json!({})).await;
    assert!(every_step >= 4, "{every_step} checkpoints with the default");
    assert_eq!(
        checkpoints_after(&h, json!({ "durability": "async" })).await,
        every_step
    );
    assert_eq!(
        checkpoints_after(&h, json!({ "durability": "exit" })).await,
        1
    );
    assert_eq!(
        checkpoints_after(&h, json!({ "checkpoint_during": false })).await,
        1
    );
    assert_eq!(
        checkpoints_after(&h, json!({ "checkpoint_during": true })).await,
        every_step
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_tags_and_metadata_are_in_the_checkpoints_metadata() {
    let h = start().await;
    let t = h.thread().await;
    let (s, out) = h
        .post(
            &format!("/threads/{t}/runs/wait"),
            json!({ "assistant_id": "job", "input": {}, "metadata": { "from": "run" },
                    "config": { "tags": ["nightly"], "metadata": { "team": "ops" }, "run_name": "daily" } }),
        )
        .await;
    assert_eq!(s, 200, "{out}");
    let (_, state) = h.get(&format!("/threads/{t}/state")).await;
    let m = &state["metadata"];
    assert_eq!(
        (&m["from"], &m["team"], &m["tags"], &m["run_name"]),
        (
            &json!("run"),
            &json!("ops"),
            &json!(["nightly"]),
            &json!("daily")
        ),
        "{m}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_run_options_are_422s_naming_the_field_and_queue_nothing() {
    let h = start().await;
    let t = h.thread().await;
    let cases = [
        (
            json!({ "config": { "recursion_limit": 0 } }),
            "$.config.recursion_limit",
        ),
        (json!({ "config": { "recursion_limit": -1 } }), "$.config"),
        (
            json!({ "config": { "recursion_limit": "many" } }),
            "$.config",
        ),
        (
            json!({ "config": { "max_concurrency": 0 } }),
            "$.config.max_concurrency",
        ),
        (json!({ "config": { "callbacks": [] } }), "$.config"),
        (json!({ "config": { "configurable": [1] } }), "$.config"),
        (json!({ "config": "fast" }), "$.config"),
        (json!({ "durability": "never" }), "durability"),
        (json!({ "checkpoint_during": "no" }), "checkpoint_during"),
        (json!({ "colour": "blue" }), "colour"),
        (
            json!({ "multitask_strategy": "shout" }),
            "multitask_strategy",
        ),
        (json!({ "multitask_strategy": 1 }), "multitask_strategy"),
        (json!({ "if_not_exists": "maybe" }), "if_not_exists"),
        (json!({ "on_disconnect": "stop" }), "on_disconnect"),
        (json!({ "on_completion": "archive" }), "on_completion"),
        (
            json!({ "on_completion": null, "durability": "Sync" }),
            "durability",
        ),
        (json!({ "feedback_keys": ["score"] }), "$.feedback_keys"),
        (
            json!({ "langsmith_tracer": { "project_name": "p" } }),
            "$.langsmith_tracer",
        ),
    ];
    for (options, needle) in cases {
        let mut body = json!({ "assistant_id": "job", "input": {} });
        body.as_object_mut()
            .unwrap()
            .extend(options.as_object().unwrap().clone());
        let (s, err) = h.post(&format!("/threads/{t}/runs"), body.clone()).await;
        assert_eq!(s, 422, "{body} → {err}");
        assert!(
            err.to_string().contains(needle),
            "{body} → {err} should name {needle}"
        );
    }
    let (_, runs) = h.get(&format!("/threads/{t}/runs")).await;
    assert_eq!(runs, json!([]));
    // An unknown cancel action names the query field; the run is not touched.
    let run = h.finished_job(&t).await;
    for action in ["stop", "Rollback", ""] {
        let (s, err) = h
            .post(
                &format!("/threads/{t}/runs/{run}/cancel?action={action}"),
                json!(null),
            )
            .await;
        assert_eq!(s, 422, "action={action}: {err}");
        assert!(err.to_string().contains("action"), "{err}");
    }
    let (s, err) = h
        .post("/runs/cancel?action=stop", json!({ "run_ids": [run] }))
        .await;
    assert_eq!(s, 422, "{err}");
    assert_eq!(h.run(&t, &run).await.1["status"], "success");
    // What the server always does anyway is accepted.
    let (s, run) = h
        .post(
            &format!("/threads/{t}/runs"),
            json!({ "assistant_id": "job", "input": {}, "strict_resume": true, "stream_resumable": true }),
        )
        .await;
    assert_eq!(s, 200, "{run}");
}

#[tokio::test]
async fn read_options_the_sdks_send_are_honoured_or_refused_by_name() {
    let h = Harness::start().await;
    // `xray`: subgraphs drawn inside their nodes, to the depth asked.
    let inner = |g: &Value| {
        g["nodes"]
            .as_array()
            .and_then(|n| n.iter().find(|n| n["id"] == "inner"))
            .cloned()
            .expect("the subgraph node")
    };
    for (query, drawn) in [
        ("", false),
        ("?xray=false", false),
        ("?xray=0", false),
        ("?xray=true", true),
        ("?xray=1", true),
    ] {
        let (s, g) = h.get(&format!("/assistants/nested/graph{query}")).await;
        assert_eq!(s, 200, "{g}");
        assert_eq!(
            inner(&g)["subgraph"]["nodes"].is_array(),
            drawn,
            "{query}: {g}"
        );
    }
    let (s, err) = h.get("/assistants/nested/graph?xray=maybe").await;
    assert_eq!(s, 422, "{err}");
    assert!(err.to_string().contains("query.xray"), "{err}");

    // Assistant search pages name the next one.
    let r = h
        .http
        .post(h.url("/assistants/search"))
        .json(&json!({ "limit": 2 }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["x-pagination-next"], "2");
    let r = h
        .http
        .post(h.url("/assistants/search"))
        .json(&json!({ "limit": 2, "offset": 3 }))
        .send()
        .await
        .unwrap();
    assert!(r.headers().get("x-pagination-next").is_none());

    // `include` asks for fields not served; `Prefer: return=minimal` answers bare.
    let t = h.thread().await;
    let (s, err) = h
        .get(&format!("/threads/{t}?include=interrupts_detail"))
        .await;
    assert_eq!(s, 422, "{err}");
    assert!(err.to_string().contains("query.include"), "{err}");
    let r = h
        .http
        .patch(h.url(&format!("/threads/{t}")))
        .header("prefer", "return=minimal")
        .json(&json!({ "metadata": { "tag": "quiet" } }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    assert!(r.text().await.unwrap().is_empty());
    assert_eq!(
        h.get(&format!("/threads/{t}")).await.1["metadata"]["tag"],
        "quiet"
    );

    // `select` of a state: its fields, or one channel of its values.
    let run = h.finished_job(&t).await;
    let (s, picked) = h
        .get(&format!("/threads/{t}/state?select=values.log&select=next"))
        .await;
    assert_eq!(s, 200, "{picked}");
    assert_eq!(
        picked,
        json!({ "next": [], "values": { "log": ["first", "second"] } })
    );
    let (s, err) = h.get(&format!("/threads/{t}/state?select=colour")).await;
    assert_eq!(s, 422, "{err}");
    assert!(err.to_string().contains("query.select"), "{err}");
    let (_, whole) = h.get(&format!("/threads/{t}/state")).await;
    let (s, at) = h
        .post(
            &format!("/threads/{t}/state/checkpoint"),
            json!({ "checkpoint": whole["checkpoint"], "select": ["checkpoint"] }),
        )
        .await;
    assert_eq!(s, 200, "{at}");
    assert_eq!(at, json!({ "checkpoint": whole["checkpoint"] }));

    // A join's `stream_mode`: only those modes' events.
    let t2 = h.thread().await;
    let r2 = h
        .background(&t2, json!({ "assistant_id": "job", "input": {}, "stream_mode": ["values", "updates", "custom"] }))
        .await;
    h.join(&t2, &r2).await;
    let all = joined(&h, &t2, &r2, "").await;
    // An empty `stream_mode` (what the SDKs send for none) is every mode.
    assert_eq!(joined(&h, &t2, &r2, "?stream_mode=").await, all);
    assert!(all.contains(&"values".to_string()) && all.contains(&"custom".to_string()));
    let updates = joined(&h, &t2, &r2, "?stream_mode=updates&stream_mode=custom").await;
    let wanted: Vec<String> = all
        .iter()
        .filter(|e| ["metadata", "updates", "custom", "end"].contains(&e.as_str()))
        .cloned()
        .collect();
    assert_eq!(updates, wanted, "all: {all:?}");
    assert!(wanted.len() >= 5 && wanted.len() < all.len(), "{all:?}");
    let (s, err) = h
        .get(&format!(
            "/threads/{t2}/runs/{r2}/stream?stream_mode=colour"
        ))
        .await;
    assert_eq!(s, 422, "{err}");
    assert!(err.to_string().contains("stream_mode"), "{err}");
    let _ = run;
}

/// The events of a run's stream joined with `query`.
async fn joined(h: &Harness, t: &str, r: &str, query: &str) -> Vec<String> {
    let url = h.url(&format!("/threads/{t}/runs/{r}/stream{query}"));
    let response = h.http.get(url).send().await.unwrap();
    h.sse(response)
        .await
        .into_iter()
        .map(|(e, _, _)| e)
        .collect()
}
