//! The graphs the server tests serve, a server on a temporary SQLite file (or any
//! server the test configures, such as one on PostgreSQL), and an HTTP client with
//! the helpers the tests share.

#![allow(dead_code)]

use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use stategraph::prelude::*;
use stategraph_server::{Running, Server};

/// Steps that each take `delay_ms`, then a question for a human.
#[derive(GraphState, schemars::JsonSchema, Clone, Debug, Default)]
pub struct Job {
    /// How long each step sleeps.
    pub delay_ms: u64,
    /// What ran, in order.
    #[reducer(append)]
    pub log: Vec<String>,
    /// How many steps ran.
    #[reducer(add)]
    pub count: u32,
    /// Ask a human after the steps.
    pub ask: bool,
    /// The human's answer.
    pub answer: Option<String>,
}

async fn step(job: &Job, name: &str) -> JobUpdate {
    tokio::time::sleep(Duration::from_millis(job.delay_ms)).await;
    Job::update().log([name.to_string()]).count(1)
}

#[node]
async fn first(job: &Job) -> JobUpdate {
    step(job, "first").await
}

#[node]
async fn second(job: &Job, ctx: &NodeContext) -> Result<JobUpdate, NodeError> {
    ctx.emit(json!({ "progress": "halfway" })).await?;
    Ok(step(job, "second").await)
}

/// Asks, then (answered) takes `delay_ms` like the steps.
#[node]
async fn question(job: &Job, ctx: &NodeContext) -> Result<JobUpdate, NodeError> {
    if !job.ask {
        return Ok(Job::update());
    }
    let answer: String = ctx.interrupt(json!({ "question": "go on?" }))?;
    tokio::time::sleep(Duration::from_millis(job.delay_ms)).await;
    Ok(Job::update()
        .answer(Some(answer))
        .log(["answered".to_string()]))
}

/// first → second → question → END.
pub fn job_graph() -> StateGraph<Job> {
    let mut g = StateGraph::<Job>::new();
    g.add_node(first)
        .add_node(second)
        .add_node(question)
        .add_edge(START, first)
        .add_edge(first, second)
        .add_edge(second, question)
        .add_edge(question, END);
    g
}

/// `outer` runs `job_graph` (compiled in memory) as its subgraph `inner`, sharing
/// the state.
pub fn nested_graph() -> StateGraph<Job> {
    let child = job_graph().compile().expect("the child compiles");
    let mut g = StateGraph::<Job>::new();
    let inner = g.add_subgraph(stategraph::Subgraph::shared("inner", child));
    g.add_edge(START, &inner).add_edge(&inner, END);
    g
}

/// A running server and a client for it.
pub struct Harness {
    pub running: Running,
    pub base: String,
    pub http: reqwest::Client,
    /// The SQLite file's directory, for servers `start` made.
    pub dir: Option<tempfile::TempDir>,
}

/// `server` serving the test graphs: `job`, `research`, `nested` and `chat`.
pub fn with_graphs(server: Server) -> Server {
    server
        .graph("job", job_graph())
        .graph("research", stategraph_examples::research::graph())
        .graph("nested", nested_graph())
        .graph("chat", chat_graph())
}

impl Harness {
    /// `job` and `research` on a fresh SQLite file.
    pub async fn start() -> Self {
        Self::start_with(|s| s).await
    }

    /// As `start`, with the server configured further.
    pub async fn start_with(configure: impl FnOnce(Server) -> Server) -> Self {
        let dir = tempfile::tempdir().expect("a temp dir");
        let server = with_graphs(Server::new())
            .sqlite(dir.path().join("server.sqlite"))
            .lease(Duration::from_secs(2));
        let mut h = Self::bind(configure(server)).await;
        h.dir = Some(dir);
        h
    }

    /// Binds `server` (configured by the test) on a free port.
    pub async fn bind(server: Server) -> Self {
        let running = server.bind("127.0.0.1:0").await.expect("the server starts");
        let base = format!("http://{}", running.local_addr());
        Harness {
            running,
            base,
            http: reqwest::Client::new(),
            dir: None,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// POSTs JSON; the status and the JSON body (`null` when empty).
    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        post(&self.http, &self.url(path), body).await
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        read(
            self.http
                .get(self.url(path))
                .send()
                .await
                .expect("a response"),
        )
        .await
    }

    /// A new thread's id.
    pub async fn thread(&self) -> String {
        let (status, t) = self.post("/threads", json!({})).await;
        assert_eq!(status, 200, "{t}");
        t["thread_id"].as_str().expect("an id").to_string()
    }

    /// Starts a background run; its id.
    pub async fn background(&self, thread: &str, body: Value) -> String {
        let (status, run) = self.post(&format!("/threads/{thread}/runs"), body).await;
        assert_eq!(status, 200, "{run}");
        run["run_id"].as_str().expect("a run id").to_string()
    }

    /// Runs the `job` graph on `thread` to its end (two steps, no question); the
    /// run's id.
    pub async fn finished_job(&self, thread: &str) -> String {
        let run = self
            .background(thread, json!({ "assistant_id": "job", "input": {} }))
            .await;
        self.join(thread, &run).await;
        run
    }

    /// Waits for a run to end; its final record.
    pub async fn join(&self, thread: &str, run: &str) -> Value {
        let (status, out) = self
            .get(&format!("/threads/{thread}/runs/{run}/join"))
            .await;
        assert_eq!(status, 200, "{out}");
        out
    }

    /// The run's record.
    pub async fn run(&self, thread: &str, run: &str) -> (u16, Value) {
        self.get(&format!("/threads/{thread}/runs/{run}")).await
    }

    /// Reads an SSE response to its end: `(event, data, id)` per event.
    pub async fn sse(&self, response: reqwest::Response) -> Vec<(String, Value, Option<String>)> {
        parse_sse(response).await
    }
}

/// POSTs JSON to `url`; the status and the JSON body.
pub async fn post(http: &reqwest::Client, url: &str, body: Value) -> (u16, Value) {
    let r = http.post(url).json(&body).send().await.expect("a response");
    read(r).await
}

pub async fn read(r: reqwest::Response) -> (u16, Value) {
    let status = r.status().as_u16();
    let text = r.text().await.expect("a body");
    let body = if text.trim().is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or(Value::String(text))
    };
    (status, body)
}

/// One server-sent event: `(event, data, id)`.
pub type SseEvent = (String, Value, Option<String>);

/// Server-sent events, parsed as the WHATWG rules say (enough for our server's
/// output: `event`, `data`, `id` lines, blank-line dispatch, `:` comments), read
/// one at a time — for streams that do not end.
pub struct SseReader {
    body: std::pin::Pin<Box<dyn futures::Stream<Item = reqwest::Result<axum::body::Bytes>> + Send>>,
    buf: String,
    event: String,
    data: String,
    id: Option<String>,
}

impl SseReader {
    pub fn new(response: reqwest::Response) -> Self {
        SseReader {
            body: Box::pin(response.bytes_stream()),
            buf: String::new(),
            event: String::new(),
            data: String::new(),
            id: None,
        }
    }

    /// The next event; `None` when the stream ends.
    pub async fn next(&mut self) -> Option<SseEvent> {
        loop {
            while let Some(nl) = self.buf.find('\n') {
                let line = self.buf[..nl].trim_end_matches('\r').to_string();
                self.buf.drain(..=nl);
                if let Some(e) = self.line(&line) {
                    return Some(e);
                }
            }
            let chunk = self.body.next().await?;
            self.buf
                .push_str(&String::from_utf8_lossy(&chunk.expect("a chunk")));
        }
    }

    /// The next `n` events, failing the test if they take longer than `within`.
    pub async fn take(&mut self, n: usize, within: Duration) -> Vec<SseEvent> {
        let mut out = Vec::new();
        while out.len() < n {
            match tokio::time::timeout(within, self.next()).await {
                Ok(Some(e)) => out.push(e),
                Ok(None) => panic!("the stream ended after {out:?}"),
                Err(_) => panic!("no event within {within:?} after {out:?}"),
            }
        }
        out
    }

    fn line(&mut self, line: &str) -> Option<SseEvent> {
        if line.is_empty() {
            if self.event.is_empty() && self.data.is_empty() {
                return None;
            }
            let value = serde_json::from_str(&self.data).unwrap_or(Value::Null);
            self.data.clear();
            return Some((std::mem::take(&mut self.event), value, self.id.clone()));
        }
        if let Some(v) = line.strip_prefix("event:") {
            self.event = v.trim_start().to_string();
        } else if let Some(v) = line.strip_prefix("data:") {
            if !self.data.is_empty() {
                self.data.push('\n');
            }
            self.data.push_str(v.strip_prefix(' ').unwrap_or(v));
        } else if let Some(v) = line.strip_prefix("id:") {
            self.id = Some(v.trim_start().to_string());
        }
        None
    }
}

/// Reads a whole SSE response to its end.
pub async fn parse_sse(response: reqwest::Response) -> Vec<SseEvent> {
    let mut reader = SseReader::new(response);
    let mut out = Vec::new();
    while let Some(e) = reader.next().await {
        out.push(e);
    }
    out
}

/// A chat: every user message gets an echo.
#[derive(GraphState, schemars::JsonSchema, Clone, Debug, Default)]
pub struct Chat {
    /// The conversation.
    #[reducer(messages)]
    pub messages: Vec<Message>,
}

#[node]
fn echo(chat: &Chat) -> ChatUpdate {
    let last = chat
        .messages
        .last()
        .map(|m| m.content.clone())
        .unwrap_or_default();
    Chat::update().messages([Message::assistant(format!("echo: {last}"))])
}

/// START → echo → END.
pub fn chat_graph() -> StateGraph<Chat> {
    let mut g = StateGraph::<Chat>::new();
    g.add_node(echo).add_edge(START, echo).add_edge(echo, END);
    g
}

/// Double-texting on `h` (any queue): `reject` refuses a second run while the
/// thread is busy, `enqueue` runs it after the first, `interrupt` stops the first
/// where it is, `rollback` deletes the first and starts from the state before it.
pub async fn check_double_texting(h: &Harness) {
    let slow = json!({ "delay_ms": 400 });
    // reject: a 409 while the thread is busy, and nothing queued.
    let t = h.thread().await;
    let busy = h
        .background(&t, json!({ "assistant_id": "job", "input": slow }))
        .await;
    let (status, err) = h
        .post(
            &format!("/threads/{t}/runs"),
            json!({ "assistant_id": "job", "input": {}, "multitask_strategy": "reject" }),
        )
        .await;
    assert_eq!(status, 409, "{err}");
    h.join(&t, &busy).await;
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
}

/// A resume run rolled back while it works: the thread is back where it was, its
/// question still pending, its update undone, and the next resume answers it.
pub async fn check_rollback_of_a_resume(h: &Harness) {
    let t = h.thread().await;
    let (status, paused) = h
        .post(
            &format!("/threads/{t}/runs/wait"),
            json!({ "assistant_id": "job", "input": { "delay_ms": 1, "ask": true } }),
        )
        .await;
    assert_eq!(status, 200, "{paused}");
    // The update makes the answered question take 3 s: rolled back in the middle.
    let resume = h
        .background(
            &t,
            json!({ "assistant_id": "job",
                    "command": { "resume": "first answer", "update": { "delay_ms": 3000 } } }),
        )
        .await;
    while h.run(&t, &resume).await.1["status"] == "pending" {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let r = h
        .http
        .post(h.url(&format!(
            "/threads/{t}/runs/{resume}/cancel?wait=1&action=rollback"
        )))
        .send()
        .await
        .expect("a response");
    assert_eq!(r.status(), 204);
    assert_eq!(
        h.run(&t, &resume).await.0,
        404,
        "a rolled-back run is deleted"
    );
    let (_, state) = h.get(&format!("/threads/{t}/state")).await;
    assert_eq!(state["next"], json!(["question"]), "{state}");
    assert_eq!(
        state["tasks"][0]["interrupts"][0]["value"],
        json!({ "question": "go on?" }),
        "the question is pending again: {state}"
    );
    assert_eq!(
        state["values"]["delay_ms"], 1,
        "the resume's update is undone: {state}"
    );
    let (_, thread) = h.get(&format!("/threads/{t}")).await;
    assert_eq!(thread["status"], "interrupted", "{thread}");
    let (status, out) = h
        .post(
            &format!("/threads/{t}/runs/wait"),
            json!({ "assistant_id": "job", "command": { "resume": "second answer" } }),
        )
        .await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(out["answer"], "second answer", "{out}");
    assert_eq!(out["log"], json!(["first", "second", "answered"]), "{out}");
}

/// Thread search's `ids`, `sort_by`/`sort_order`, `select` and `extract`, as the SDK
/// sends them; a field it does not know, a bad sort key or too many paths are 422s.
pub async fn check_thread_search(h: &Harness) {
    let mut made = Vec::new();
    for (i, tag) in ["b", "a", "c"].into_iter().enumerate() {
        let id = format!("search-{tag}-{}", uuid_like(i));
        let (s, _) = h
            .post(
                "/threads",
                json!({ "thread_id": id, "metadata": { "suite": "search", "n": i } }),
            )
            .await;
        assert_eq!(s, 200);
        made.push(id);
        // Distinct creation times.
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let run = h
        .background(
            &made[1],
            json!({ "assistant_id": "job", "input": { "delay_ms": 1 } }),
        )
        .await;
    h.join(&made[1], &run).await;
    let search = |body: Value| async move {
        let (s, out) = h.post("/threads/search", body.clone()).await;
        assert_eq!(s, 200, "{body} → {out}");
        out.as_array().cloned().unwrap_or_default()
    };
    let ids = |list: &[Value]| -> Vec<String> {
        list.iter()
            .map(|t| t["thread_id"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    let suite = json!({ "suite": "search" });
    let by_id =
        search(json!({ "metadata": suite, "sort_by": "thread_id", "sort_order": "asc" })).await;
    let mut sorted = made.clone();
    sorted.sort();
    assert_eq!(ids(&by_id), sorted);
    let newest_first =
        search(json!({ "metadata": suite, "sort_by": "created_at", "sort_order": "desc" })).await;
    assert_eq!(
        ids(&newest_first),
        made.iter().rev().cloned().collect::<Vec<_>>()
    );
    // The thread that ran changed last.
    let changed = search(json!({ "metadata": suite, "sort_by": "updated_at" })).await;
    assert_eq!(ids(&changed)[0], made[1]);
    let two =
        search(json!({ "ids": [made[0], made[2], "no-such-thread"], "sort_by": "thread_id" }))
            .await;
    let mut expected = vec![made[0].clone(), made[2].clone()];
    expected.sort();
    expected.reverse();
    assert_eq!(ids(&two), expected);
    let (_, n) = h.post("/threads/count", json!({ "ids": [made[0]] })).await;
    assert_eq!(n, json!(1));
    // `select` keeps only the fields named; `extract` adds `extracted`.
    let picked = search(json!({ "ids": [made[1]], "select": ["thread_id", "status"],
                                "extract": { "last": "values.log[-1]", "first": "values.log[0]", "none": "values.nope" } }))
    .await;
    assert_eq!(
        picked,
        [json!({ "thread_id": made[1], "status": "idle",
                 "extracted": { "last": "second", "first": "first", "none": null } })]
    );
    for (body, needle) in [
        (json!({ "sort_by": "colour" }), "sort_by"),
        (json!({ "sort_order": "up" }), "sort_order"),
        (json!({ "select": ["secrets"] }), "select"),
        (json!({ "idz": ["x"] }), "idz"),
        (json!({ "extract": { "a": 1 } }), "$.extract.a"),
        (
            json!({ "extract": (0..11).map(|i| (format!("k{i}"), json!("values"))).collect::<serde_json::Map<_, _>>() }),
            "$.extract",
        ),
    ] {
        let (s, err) = h.post("/threads/search", body.clone()).await;
        assert_eq!(s, 422, "{body} → {err}");
        assert!(
            err.to_string().contains(needle),
            "{body} → {err} should name {needle}"
        );
    }
}

/// A short unique suffix (thread ids must not collide across test runs on a shared
/// database).
fn uuid_like(i: usize) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{nanos:x}{i}")
}
