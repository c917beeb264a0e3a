//! The run queue on PostgreSQL, through HTTP: the behaviours the SQLite queue has —
//! a run to an interrupt and a resume, and double-texting by every multitask
//! strategy.

mod pg;

use std::time::Duration;

use pg::Harness;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_pauses_at_approve_and_a_resume_publishes() {
    let Some(url) = pg::postgres_url("a_run_pauses_at_approve_and_a_resume_publishes") else {
        return;
    };
    let schema = pg::fresh_schema("sg_srv_resume");
    let h = Harness::start(pg::server(&url, &schema)).await;
    let t = h.thread().await;
    let (status, out) = h
        .post(
            &format!("/threads/{t}/runs/wait"),
            json!({ "assistant_id": "research", "input": { "topic": "Rust at work" } }),
        )
        .await;
    assert_eq!(status, 200, "{out}");
    assert!(out["__interrupt__"][0]["value"].is_object(), "{out}");
    assert!(out["report"].is_null(), "{out}");
    let (_, thread) = h.get(&format!("/threads/{t}")).await;
    assert_eq!(thread["status"], "interrupted", "{thread}");
    let (_, state) = h.get(&format!("/threads/{t}/state")).await;
    assert_eq!(state["next"], json!(["approve"]), "{state}");

    let (status, out) = h
        .post(
            &format!("/threads/{t}/runs/wait"),
            json!({ "assistant_id": "research", "command": { "resume": { "decision": "publish" } } }),
        )
        .await;
    assert_eq!(status, 200, "{out}");
    assert!(out["report"].is_string(), "{out}");
    assert_eq!(out["verdict"], json!({ "decision": "publish" }), "{out}");
    let (_, thread) = h.get(&format!("/threads/{t}")).await;
    assert_eq!(thread["status"], "idle", "{thread}");
    let (_, runs) = h.get(&format!("/threads/{t}/runs")).await;
    let runs = runs.as_array().expect("runs");
    assert_eq!(runs.len(), 2);
    assert!(runs.iter().all(|r| r["status"] == "success"), "{runs:?}");

    // Thread search goes through JSONB containment.
    let (status, found) = h
        .post(
            "/threads/search",
            json!({ "metadata": { "graph_id": "research" }, "status": "idle" }),
        )
        .await;
    assert_eq!(status, 200, "{found}");
    assert_eq!(found.as_array().expect("threads").len(), 1, "{found}");
    let (_, none) = h
        .post(
            "/threads/search",
            json!({ "metadata": { "graph_id": "job" } }),
        )
        .await;
    assert_eq!(none, json!([]));

    h.running.shutdown().await.expect("a clean shutdown");
    pg::drop_schema(&url, &schema).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn double_texting_follows_the_multitask_strategy() {
    let Some(url) = pg::postgres_url("double_texting_follows_the_multitask_strategy") else {
        return;
    };
    let schema = pg::fresh_schema("sg_srv_multitask");
    let h = Harness::start(pg::server(&url, &schema)).await;
    let slow = json!({ "delay_ms": 400 });
    // reject: a 409 while the thread is busy, and nothing queued.
    let t = h.thread().await;
    let first = h
        .background(&t, json!({ "assistant_id": "job", "input": slow }))
        .await;
    let (status, err) = h
        .post(
            &format!("/threads/{t}/runs"),
            json!({ "assistant_id": "job", "input": {}, "multitask_strategy": "reject" }),
        )
        .await;
    assert_eq!(status, 409, "{err}");
    h.join(&t, &first).await;
    let (_, runs) = h.get(&format!("/threads/{t}/runs")).await;
    assert_eq!(runs.as_array().unwrap().len(), 1);

    // enqueue: the second runs after the first, on its state.
    let t = h.thread().await;
    let a = h
        .background(&t, json!({ "assistant_id": "job", "input": slow }))
        .await;
    let b = h.background(&t, json!({ "assistant_id": "job", "input": { "delay_ms": 1 }, "multitask_strategy": "enqueue" })).await;
    let out = h.join(&t, &b).await;
    assert_eq!(out["log"], json!(["first", "second", "first", "second"]));
    assert_eq!(h.run(&t, &a).await.1["status"], "success");

    // interrupt: the first stops where it is (its finished steps stay), the second runs.
    let t = h.thread().await;
    let a = h
        .background(&t, json!({ "assistant_id": "job", "input": slow }))
        .await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    let b = h.background(&t, json!({ "assistant_id": "job", "input": { "delay_ms": 1 }, "multitask_strategy": "interrupt" })).await;
    let out = h.join(&t, &b).await;
    assert_eq!(h.run(&t, &a).await.1["status"], "interrupted");
    assert_eq!(out["log"][0], "first", "{out}");
    assert_eq!(
        out["count"].as_u64().unwrap(),
        out["log"].as_array().unwrap().len() as u64
    );
    assert!(
        out["log"].as_array().unwrap().len() >= 3,
        "the interrupted run's first step stays: {out}"
    );

    // rollback: the first run is deleted with its checkpoints; the second starts
    // from the state before it.
    let t = h.thread().await;
    h.post(
        &format!("/threads/{t}/runs/wait"),
        json!({ "assistant_id": "job", "input": { "delay_ms": 1 } }),
    )
    .await;
    let a = h
        .background(&t, json!({ "assistant_id": "job", "input": slow }))
        .await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    let b = h.background(&t, json!({ "assistant_id": "job", "input": { "delay_ms": 1 }, "multitask_strategy": "rollback" })).await;
    let out = h.join(&t, &b).await;
    assert_eq!(h.run(&t, &a).await.0, 404);
    assert_eq!(
        out["log"],
        json!(["first", "second", "first", "second"]),
        "{out}"
    );
    assert_eq!(out["delay_ms"], 1);

    h.running.shutdown().await.expect("a clean shutdown");
    pg::drop_schema(&url, &schema).await;
}
