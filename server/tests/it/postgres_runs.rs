//! The run queue on PostgreSQL, through HTTP: the behaviours the SQLite queue has —
//! a run to an interrupt and a resume, and double-texting by every multitask
//! strategy.

use crate::common;
use crate::pg;

use common::Harness;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_pauses_at_approve_and_a_resume_publishes() {
    let Some(url) = pg::postgres_url("a_run_pauses_at_approve_and_a_resume_publishes") else {
        return;
    };
    let schema = pg::fresh_schema("sg_srv_resume");
    let h = Harness::bind(pg::server(&url, &schema)).await;
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
    let h = Harness::bind(pg::server(&url, &schema)).await;
    common::check_double_texting(&h).await;

    h.running.shutdown().await.expect("a clean shutdown");
    pg::drop_schema(&url, &schema).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_rolled_back_leaves_its_question_pending() {
    let Some(url) = pg::postgres_url("a_resume_rolled_back_leaves_its_question_pending") else {
        return;
    };
    let schema = pg::fresh_schema("sg_srv_rollback");
    let h = Harness::bind(pg::server(&url, &schema)).await;
    common::check_rollback_of_a_resume(&h).await;
    pg::drop_schema(&url, &schema).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thread_search_filters_sorts_selects_and_extracts() {
    let Some(url) = pg::postgres_url("thread_search_filters_sorts_selects_and_extracts") else {
        return;
    };
    let schema = pg::fresh_schema("sg_srv_search");
    let h = Harness::bind(pg::server(&url, &schema)).await;
    common::check_thread_search(&h).await;
}
