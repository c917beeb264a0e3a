//! Assistants made through the API: created from a served graph with their own
//! configuration, versioned by every change, any version made current again,
//! deleted with their threads; their runs start from their configuration. The
//! served graphs stay the system assistants, which are not changed here.

use crate::common;
use crate::pg;

use common::Harness;
use serde_json::{Value, json};

async fn send(h: &Harness, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut req = h
        .http
        .request(method.parse().expect("a method"), h.url(path));
    if let Some(b) = body {
        req = req.json(&b);
    }
    common::read(req.send().await.expect("a response")).await
}

pub(crate) async fn check_assistants(h: &Harness) {
    // Made: version 1, named like its graph unless named.
    let (status, a) = h
        .post(
            "/assistants",
            json!({
                "graph_id": "job",
                "config": { "recursion_limit": 1, "configurable": { "model": "small" } },
                "metadata": { "owner": "ops" },
                "description": "a short leash",
            }),
        )
        .await;
    assert_eq!(status, 200, "{a}");
    let id = a["assistant_id"].as_str().expect("an id").to_string();
    assert_eq!(
        (a["version"].clone(), a["name"].clone()),
        (json!(1), json!("job"))
    );
    assert_eq!(h.get(&format!("/assistants/{id}")).await.1, a);
    let (_, found) = h
        .post("/assistants/search", json!({ "graph_id": "job" }))
        .await;
    let ids: Vec<&str> = found
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|a| a["assistant_id"].as_str())
        .collect();
    assert_eq!(
        ids.len(),
        2,
        "the system assistant and the new one: {found}"
    );
    let (_, mine) = h
        .post(
            "/assistants/search",
            json!({ "metadata": { "owner": "ops" } }),
        )
        .await;
    assert_eq!(mine.as_array().map(Vec::len), Some(1), "{mine}");
    let (_, n) = h
        .post("/assistants/count", json!({ "graph_id": "job" }))
        .await;
    assert_eq!(n, 2);
    assert_eq!(h.get(&format!("/assistants/{id}/graph")).await.0, 200);

    // Its runs start from its configuration: a recursion limit of 1 stops the job;
    // the run's own limit wins.
    let t = h.thread().await;
    let short = h
        .background(&t, json!({ "assistant_id": id, "input": {} }))
        .await;
    h.join(&t, &short).await;
    let (_, run) = h.run(&t, &short).await;
    assert_eq!(run["status"], "error", "{run}");
    assert_eq!(run["assistant_id"], id.as_str());
    assert_eq!(
        run["kwargs"]["config"]["configurable"]["model"], "small",
        "{run}"
    );
    let long = h
        .background(
            &t,
            json!({ "assistant_id": id, "input": {}, "config": { "recursion_limit": 10 } }),
        )
        .await;
    h.join(&t, &long).await;
    assert_eq!(h.run(&t, &long).await.1["status"], "success");
    let (_, thread) = h.get(&format!("/threads/{t}")).await;
    assert_eq!(thread["metadata"]["assistant_id"], id.as_str(), "{thread}");

    // A change is a new version; metadata merges; any version can be current again.
    let (status, v2) = send(
        h,
        "PATCH",
        &format!("/assistants/{id}"),
        Some(json!({ "config": { "recursion_limit": 10 }, "metadata": { "tier": "gold" } })),
    )
    .await;
    assert_eq!(status, 200, "{v2}");
    assert_eq!(v2["version"], 2);
    assert_eq!(v2["metadata"], json!({ "owner": "ops", "tier": "gold" }));
    let (_, versions) = h
        .post(&format!("/assistants/{id}/versions"), json!({}))
        .await;
    let numbers: Vec<i64> = versions
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|v| v["version"].as_i64())
        .collect();
    assert_eq!(numbers, [2, 1]);
    let (_, gold) = h
        .post(
            &format!("/assistants/{id}/versions"),
            json!({ "metadata": { "tier": "gold" } }),
        )
        .await;
    assert_eq!(gold.as_array().map(Vec::len), Some(1));
    let (status, v1) = h
        .post(&format!("/assistants/{id}/latest"), json!({ "version": 1 }))
        .await;
    assert_eq!(status, 200, "{v1}");
    assert_eq!(
        (
            v1["version"].clone(),
            v1["config"]["recursion_limit"].clone()
        ),
        (json!(1), json!(1))
    );
    assert_eq!(h.get(&format!("/assistants/{id}")).await.1["version"], 1);
    assert_eq!(
        h.post(&format!("/assistants/{id}/latest"), json!({ "version": 9 }))
            .await
            .0,
        404
    );

    // The same id again: a 409, or the existing one with `do_nothing`.
    let again = json!({ "graph_id": "job", "assistant_id": id });
    assert_eq!(h.post("/assistants", again.clone()).await.0, 409);
    let mut quiet = again.clone();
    quiet["if_exists"] = json!("do_nothing");
    assert_eq!(h.post("/assistants", quiet).await.1["version"], 1);

    // Deleted with the threads that ran it.
    assert_eq!(
        send(
            h,
            "DELETE",
            &format!("/assistants/{id}?delete_threads=true"),
            None
        )
        .await
        .0,
        204
    );
    assert_eq!(h.get(&format!("/assistants/{id}")).await.0, 404);
    assert_eq!(h.get(&format!("/threads/{t}")).await.0, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn assistants_are_made_versioned_used_and_deleted() {
    let h = Harness::start().await;
    check_assistants(&h).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn assistants_on_postgres() {
    let Some(url) = pg::postgres_url("assistants_on_postgres") else {
        return;
    };
    let schema = pg::fresh_schema("sg_srv_assistants");
    let h = Harness::bind(pg::server(&url, &schema)).await;
    check_assistants(&h).await;
    h.running.shutdown().await.expect("a clean shutdown");
    pg::drop_schema(&url, &schema).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_assistants_are_refused_and_system_ones_are_not_changed() {
    let h = Harness::start().await;
    for (body, status, field) in [
        (json!({}), 422, Some("$.graph_id")),
        (json!({ "graph_id": "nowhere" }), 404, None),
        (
            json!({ "graph_id": "job", "config": { "bogus": 1 } }),
            422,
            Some("$.config.bogus"),
        ),
        (
            json!({ "graph_id": "job", "config": { "recursion_limit": "many" } }),
            422,
            Some("$.config.recursion_limit"),
        ),
        (
            json!({ "graph_id": "job", "context": 7 }),
            422,
            Some("$.context"),
        ),
        (
            json!({ "graph_id": "job", "assistant_id": "job" }),
            409,
            None,
        ),
        (json!({ "graph_id": "job", "colour": "red" }), 422, None),
    ] {
        let (got, err) = h.post("/assistants", body.clone()).await;
        assert_eq!(got, status, "{body} → {err}");
        if let Some(field) = field {
            assert_eq!(err["errors"][0]["path"], field, "{body} → {err}");
        }
    }
    let (_, system) = h.get("/assistants/job").await;
    assert_eq!(system["metadata"]["created_by"], "system");
    let id = system["assistant_id"].as_str().expect("an id");
    assert_eq!(
        send(
            &h,
            "PATCH",
            &format!("/assistants/{id}"),
            Some(json!({ "name": "x" }))
        )
        .await
        .0,
        409
    );
    assert_eq!(
        send(&h, "DELETE", &format!("/assistants/{id}"), None)
            .await
            .0,
        409
    );
    let (_, versions) = h
        .post(&format!("/assistants/{id}/versions"), json!({}))
        .await;
    assert_eq!(versions.as_array().map(Vec::len), Some(1));
    assert_eq!(
        h.post("/assistants/no-such/versions", json!({})).await.0,
        404
    );
    assert_eq!(send(&h, "DELETE", "/assistants/no-such", None).await.0, 404);
    let (_, n) = h.post("/assistants/count", json!({})).await;
    assert_eq!(n, 4, "only the served graphs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subgraphs_are_listed_by_namespace() {
    let h = Harness::start().await;
    let (status, all) = h.get("/assistants/nested/subgraphs").await;
    assert_eq!(status, 200, "{all}");
    let names: Vec<&String> = all.as_object().expect("a map").keys().collect();
    assert_eq!(names, ["inner"]);
    assert_eq!(all["inner"]["graph_id"], "nested");
    assert_eq!(all["inner"]["state_schema"], Value::Null);
    let (_, one) = h
        .get("/assistants/nested/subgraphs/inner?recurse=true")
        .await;
    assert_eq!(one, all);
    assert_eq!(
        h.get("/assistants/nested/subgraphs/nowhere").await.1,
        json!({})
    );
    assert_eq!(h.get("/assistants/job/subgraphs").await.1, json!({}));
    assert_eq!(h.get("/assistants/nobody/subgraphs").await.0, 404);
    let (status, err) = h.get("/assistants/nested/subgraphs?recurse=maybe").await;
    assert_eq!(
        (status, &err["errors"][0]["path"]),
        (422, &json!("query.recurse")),
        "{err}"
    );
}
