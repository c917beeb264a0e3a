//! The Studio's JSON API and pages over real HTTP on loopback, against a SQLite file
//! written by the demo pipeline: one thread paused at its `approve` interrupt, one
//! answered and finished, then forked with `update_state` at step 2.

use std::sync::Arc;

use serde_json::{Value, json};
use stategraph::prelude::*;
use stategraph_examples::research::{self, Research, Verdict};
use stategraph_sqlite::SqliteSaver;
use stategraph_studio::{Studio, api, pages};

/// The demo's database, its graph version, the served base URL.
struct Fixture {
    _dir: tempfile::TempDir,
    base: String,
    version: String,
    /// The step-2 checkpoint `research-1` was forked from.
    fork_parent: String,
    /// The checkpoint `update_state` wrote there.
    fork: String,
    client: reqwest::Client,
}

async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("demo.sqlite");
    let demo = research::build(SqliteSaver::open(&db).unwrap()).unwrap();
    let topic = || Research::update().topic(research::TOPIC);
    // research-1: asked, answered, finished; then forked at step 2.
    let one = RunConfig::new().thread("research-1");
    let paused = demo.invoke(topic(), &one).await.unwrap();
    assert_eq!(paused.interrupts.len(), 1);
    let done = demo
        .invoke(Command::resume(Verdict::Publish), &one)
        .await
        .unwrap();
    assert!(done.values.report.is_some());
    let history = demo
        .get_state_history(&one, &stategraph::checkpoint::ListOptions::new())
        .await
        .unwrap();
    let at_two = history
        .iter()
        .find(|s| s.metadata.step == 2)
        .unwrap()
        .config
        .checkpoint_id
        .clone()
        .unwrap();
    let forked = demo
        .update_state(
            &RunConfig::new().thread("research-1").checkpoint(&at_two),
            Research::update().draft("forked draft"),
        )
        .await
        .unwrap();
    // research-2: paused at the interrupt.
    let two = RunConfig::new().thread("research-2");
    assert_eq!(
        demo.invoke(topic(), &two).await.unwrap().interrupts.len(),
        1
    );

    let saver = Arc::new(SqliteSaver::open(&db).unwrap());
    let app = pages().merge(api(Studio::stored(saver, db.display().to_string())));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    Fixture {
        _dir: dir,
        base: format!("http://{addr}"),
        version: demo.graph_version().to_string(),
        fork_parent: at_two,
        fork: forked.checkpoint_id.unwrap(),
        client: reqwest::Client::new(),
    }
}

impl Fixture {
    async fn get(&self, path: &str) -> (u16, Value) {
        let response = self
            .client
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap())
    }

    async fn ok(&self, path: &str) -> Value {
        let (status, body) = self.get(path).await;
        assert_eq!(status, 200, "{path}: {body}");
        body
    }
}

fn strs(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_lists_shows_and_diffs_the_demo_threads() {
    let f = fixture().await;

    let info = f.ok("/studio/api/info").await;
    assert_eq!(info["mode"], "stored");
    assert_eq!(info["drive"], false);
    assert!(info["source"].as_str().unwrap().ends_with("demo.sqlite"));

    // The list: newest first, with statuses, search and status filters.
    let list = f.ok("/studio/api/threads").await;
    assert_eq!(list["total"], 2);
    let rows = list["threads"].as_array().unwrap();
    let ids: Vec<&str> = rows
        .iter()
        .map(|r| r["thread_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["research-2", "research-1"]);
    assert_eq!(rows[0]["status"], "interrupted");
    // The fork planned what follows the update: a run would continue from there.
    assert_eq!(rows[1]["status"], "running");
    for row in rows {
        assert_eq!(row["graph_version"], json!(f.version));
        assert_eq!(row["graph_id"], Value::Null);
        assert!(row["checkpoints"].as_u64().unwrap() > 3);
        assert!(row["updated_at"].as_str().unwrap().ends_with('Z'));
    }
    let searched = f.ok("/studio/api/threads?search=ch-1").await;
    assert_eq!(searched["total"], 1);
    assert_eq!(searched["threads"][0]["thread_id"], "research-1");
    let waiting = f.ok("/studio/api/threads?status=interrupted").await;
    assert_eq!(waiting["total"], 1);
    assert_eq!(waiting["threads"][0]["thread_id"], "research-2");
    let paged = f.ok("/studio/api/threads?limit=1&offset=1").await;
    assert_eq!(paged["total"], 2);
    assert_eq!(paged["threads"][0]["thread_id"], "research-1");
    let (status, body) = f.get("/studio/api/threads?status=sleeping").await;
    assert_eq!(status, 400);
    assert!(
        body["detail"].as_str().unwrap().contains("sleeping"),
        "{body}"
    );

    // A thread paused at its interrupt: the graph its checkpoints recorded, the
    // timeline oldest first, the path it took.
    let thread = f.ok("/studio/api/threads/research-2").await;
    assert_eq!(thread["status"], "interrupted");
    assert_eq!(thread["graph_version"], json!(f.version));
    let graph = &thread["graph"];
    assert_eq!(graph["version"], json!(f.version));
    let nodes: Vec<&str> = graph["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        nodes,
        [
            "__start__",
            "plan",
            "research",
            "write",
            "review",
            "approve",
            "publish",
            "__end__"
        ]
    );
    let timeline = thread["timeline"].as_array().unwrap();
    assert_eq!(timeline[0]["source"], "input");
    assert_eq!(timeline[0]["step"], -1);
    assert_eq!(timeline[0]["parent_checkpoint_id"], Value::Null);
    for pair in timeline.windows(2) {
        assert_eq!(pair[1]["parent_checkpoint_id"], pair[0]["checkpoint_id"]);
        assert_eq!(
            pair[1]["step"].as_i64(),
            pair[0]["step"].as_i64().map(|s| s + 1)
        );
        assert_eq!(pair[1]["branch"], 0);
    }
    // plan ran first: it wrote the questions and its router fanned out to research.
    let plan = &timeline[1]["tasks"][0];
    assert_eq!(plan["node"], "plan");
    assert!(plan["duration_us"].as_u64().unwrap() >= 100_000, "{plan}");
    assert_eq!(
        (plan["cached"].clone(), plan["resumed"].clone()),
        (json!(false), json!(false))
    );
    assert_eq!(plan["attempts"], 1);
    assert_eq!(plan["error"], Value::Null);
    assert!(
        plan["writes"]["questions"].as_array().unwrap().len() > 1,
        "{plan}"
    );
    assert_eq!(strs(&timeline[1]["next"]).first(), Some(&"research"));
    let researched = timeline[2]["tasks"].as_array().unwrap();
    assert!(researched.len() > 1);
    assert!(researched.iter().all(|t| t["node"] == "research"));
    let last = timeline.last().unwrap();
    assert_eq!(strs(&last["next"]), ["approve"]);
    assert_eq!(last["interrupts"][0]["node"], "approve");
    assert_eq!(last["interrupts"][0]["answered"], false);
    assert_eq!(last["interrupts"][0]["ns"], "");
    assert_eq!(
        last["interrupts"][0]["value"]["question"],
        "publish this report?"
    );
    let review = last["tasks"].as_array().unwrap();
    assert_eq!(review[0]["node"], "review");
    assert_eq!(strs(&review[0]["routed_to"]), ["approve"]);
    let path: Vec<(&str, &str)> = thread["path"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e[0].as_str().unwrap(), e[1].as_str().unwrap()))
        .collect();
    assert_eq!(
        path,
        [
            ("__start__", "plan"),
            ("plan", "research"),
            ("research", "write"),
            ("write", "review"),
            // The first review asked for follow-up research; the second passed.
            ("review", "research"),
            ("review", "approve"),
        ]
    );

    // The forked thread: the update at step 2 is the latest line; the answered,
    // finished run is another branch.
    let forked = f.ok("/studio/api/threads/research-1").await;
    let timeline = forked["timeline"].as_array().unwrap();
    let entry = |id: &str| {
        timeline
            .iter()
            .find(|e| e["checkpoint_id"] == id)
            .unwrap()
            .clone()
    };
    let fork = entry(&f.fork);
    assert_eq!(fork["parent_checkpoint_id"], json!(f.fork_parent));
    assert_eq!(fork["source"], "update");
    assert_eq!(fork["branch"], 0);
    assert_eq!(timeline.last().unwrap()["checkpoint_id"], json!(f.fork));
    assert_eq!(entry(&f.fork_parent)["branch"], 0);
    let other: Vec<&Value> = timeline.iter().filter(|e| e["branch"] == 1).collect();
    assert!(!other.is_empty());
    assert!(other.iter().all(|e| e["step"].as_i64().unwrap() > 2));
    assert!(
        timeline
            .iter()
            .all(|e| e["branch"] == 0 || e["branch"] == 1)
    );
    let published = other.last().unwrap();
    assert_eq!(published["tasks"][0]["node"], "publish");
    assert!(published["next"].as_array().unwrap().is_empty());

    // A checkpoint's values, rebuilt as JSON without the demo's types.
    let cid = last["checkpoint_id"].as_str().unwrap();
    let shown = f
        .ok(&format!("/studio/api/threads/research-2/checkpoints/{cid}"))
        .await;
    assert_eq!(shown["checkpoint_id"], cid);
    assert_eq!(shown["values"]["topic"], research::TOPIC);
    assert!(shown["values"]["draft"].as_str().unwrap().len() > 10);
    assert_eq!(strs(&shown["next"]), ["approve"]);
    assert_eq!(shown["interrupts"][0]["node"], "approve");
    assert_eq!(shown["metadata"]["source"], "loop");
    let first = timeline_first(&f, "research-2").await;
    let input = f
        .ok(&format!(
            "/studio/api/threads/research-2/checkpoints/{first}"
        ))
        .await;
    assert!(
        input["metadata"].get("__graph__").is_none(),
        "the recorded shape is the graph's, not the checkpoint's: {}",
        input["metadata"]
    );

    // The diff from the input to the paused checkpoint, by JSON path.
    let diff = f
        .ok(&format!(
            "/studio/api/threads/research-2/diff?from={first}&to={cid}"
        ))
        .await;
    let changes = diff["changes"].as_array().unwrap();
    let at = |path: &str| changes.iter().find(|c| c["path"] == path).cloned();
    let draft = at("$.draft").unwrap();
    assert_eq!(draft["kind"], "added");
    assert_eq!(draft["before"], Value::Null);
    assert_eq!(draft["after"], shown["values"]["draft"]);
    // A channel the input did not write is one change at its own path.
    let questions = at("$.questions").unwrap();
    assert_eq!(questions["kind"], "added");
    assert!(questions["after"].as_array().unwrap().len() > 1);
    assert!(at("$.topic").is_none(), "unchanged: {diff}");
    // The fork changed one thing: the draft.
    let edit = f
        .ok(&format!(
            "/studio/api/threads/research-1/diff?from={}&to={}",
            f.fork_parent, f.fork
        ))
        .await;
    let edit = edit["changes"].as_array().unwrap();
    let changed: Vec<&Value> = edit.iter().filter(|c| c["kind"] != "added").collect();
    assert_eq!(changed.len(), 1, "{edit:?}");
    assert_eq!(changed[0]["path"], "$.draft");
    assert_eq!(changed[0]["kind"], "changed");
    assert_eq!(changed[0]["after"], "forked draft");
    assert!(
        changed[0]["before"]
            .as_str()
            .unwrap()
            .starts_with("# Should")
    );
    let back = f
        .ok(&format!(
            "/studio/api/threads/research-2/diff?from={cid}&to={first}"
        ))
        .await;
    assert_eq!(
        back["changes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["path"] == "$.draft")
            .unwrap()["kind"],
        "removed"
    );
}

async fn timeline_first(f: &Fixture, thread: &str) -> String {
    let body = f.ok(&format!("/studio/api/threads/{thread}")).await;
    body["timeline"][0]["checkpoint_id"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_threads_and_checkpoints_are_404s_that_say_so() {
    let f = fixture().await;
    let detail = |body: &Value| body["detail"].as_str().unwrap().to_string();

    let (status, body) = f.get("/studio/api/threads/nope").await;
    assert_eq!(
        (status, detail(&body)),
        (404, "thread nope not found".into())
    );
    let (status, body) = f.get("/studio/api/threads/nope/checkpoints/abc").await;
    assert_eq!(
        (status, detail(&body)),
        (404, "thread nope not found".into())
    );
    for bad in [
        "0123456789abcdef",
        "a%20b",
        "a..b",
        "%27%3B--",
        &"x".repeat(300),
    ] {
        let (status, body) = f
            .get(&format!("/studio/api/threads/research-2/checkpoints/{bad}"))
            .await;
        assert_eq!(status, 404, "{bad}: {body}");
        let text = detail(&body);
        assert!(
            text.starts_with("checkpoint ") && text.ends_with(" of thread research-2 not found"),
            "{text}"
        );
    }
    // A checkpoint of another thread is not this thread's.
    let (status, _) = f
        .get(&format!(
            "/studio/api/threads/research-2/checkpoints/{}",
            f.fork
        ))
        .await;
    assert_eq!(status, 404);
    let (status, body) = f
        .get(&format!(
            "/studio/api/threads/research-2/diff?from=nope&to={}",
            f.fork
        ))
        .await;
    assert_eq!(status, 404);
    assert_eq!(
        detail(&body),
        "checkpoint nope of thread research-2 not found"
    );
    let (status, body) = f.get("/studio/api/threads/research-2/diff").await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = f.get("/studio/api/nothing/here").await;
    assert_eq!(status, 404);
    assert!(detail(&body).contains("/studio/api/nothing/here"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_and_its_files_are_served_from_the_binary() {
    let f = fixture().await;
    for path in ["/studio", "/studio/", "/studio/threads/research-1"] {
        let response = f
            .client
            .get(format!("{}{path}", f.base))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{path}");
        let headers = response.headers().clone();
        assert_eq!(
            headers["content-type"], "text/html; charset=utf-8",
            "{path}"
        );
        assert_eq!(headers["cache-control"], "no-cache");
        // No other site may frame the page or run scripts in it.
        let csp = headers["content-security-policy"].to_str().unwrap();
        assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
        assert!(csp.contains("script-src 'self'"), "{csp}");
        assert_eq!(headers["x-frame-options"], "DENY");
        assert_eq!(headers["x-content-type-options"], "nosniff");
        let text = response.text().await.unwrap();
        assert!(text.contains("/studio/assets/studio.js"), "{path}");
    }
    for (file, kind) in [
        ("studio.js", "text/javascript; charset=utf-8"),
        ("studio.css", "text/css; charset=utf-8"),
    ] {
        let response = f
            .client
            .get(format!("{}/studio/assets/{file}", f.base))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-type"], kind);
        let body = response.bytes().await.unwrap();
        assert_eq!(&body[..], stategraph_studio::assets::file(file).unwrap());
    }
    let missing = f
        .client
        .get(format!("{}/studio/assets/nothing.js", f.base))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
}

#[derive(GraphState, Clone, Debug, Default)]
struct Job {
    #[reducer(append)]
    log: Vec<String>,
}

/// Fails while `FAIL` is set.
static FAIL: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

#[node]
fn flaky(_: &Job) -> Result<JobUpdate, NodeError> {
    if FAIL.load(std::sync::atomic::Ordering::SeqCst) {
        return Err(NodeError::msg("the printer is jammed"));
    }
    Ok(Job::update().log(["printed"]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_step_shows_its_error_and_the_retry_counts_the_attempt() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("jobs.sqlite");
    let graph = StateGraph::<Job>::new()
        .add_node(flaky)
        .add_edge(START, flaky)
        .add_edge(flaky, END)
        .compile_with(CompileOptions::new().checkpointer(SqliteSaver::open(&db).unwrap()))
        .unwrap();
    let config = RunConfig::new().thread("job");
    assert!(graph.invoke(Job::update(), &config).await.is_err());

    let saver = Arc::new(SqliteSaver::open(&db).unwrap());
    let app = api(Studio::stored(saver, "jobs"));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let client = reqwest::Client::new();
    let get = |path: &str| {
        let request = client.get(format!("{base}{path}"));
        async move { request.send().await.unwrap().json::<Value>().await.unwrap() }
    };

    let failed = get("/studio/api/threads/job").await;
    assert_eq!(failed["status"], "failed");
    let last = failed["timeline"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(strs(&last["next"]), ["flaky"]);
    assert_eq!(last["errors"][0]["node"], "flaky");
    assert!(
        last["errors"][0]["error"]
            .as_str()
            .unwrap()
            .contains("the printer is jammed"),
        "{last}"
    );

    FAIL.store(false, std::sync::atomic::Ordering::SeqCst);
    graph.invoke(None, &config).await.unwrap();
    let done = get("/studio/api/threads/job").await;
    assert_eq!(done["status"], "finished");
    let timeline = done["timeline"].as_array().unwrap();
    let ran = &timeline.last().unwrap()["tasks"][0];
    assert_eq!(ran["node"], "flaky");
    assert_eq!(ran["attempts"], 2, "{ran}");
    assert!(ran["error"].as_str().unwrap().contains("jammed"), "{ran}");
    assert_eq!(ran["writes"], json!({ "log": ["printed"] }));
    // The checkpoint it ran after no longer shows a failure: the task finished.
    assert_eq!(timeline[timeline.len() - 2]["errors"], json!([]));
}
