//! Servers on the test PostgreSQL database (`STATEGRAPH_POSTGRES_URL`, over TLS with
//! `sslmode=verify-full` when `STATEGRAPH_POSTGRES_TLS_CA` names the CA), each test
//! in a schema of its own; a small graph; an HTTP client with SSE parsing.
//!
//! Without the URL the tests skip with a notice, except under `CI=true`, where they
//! fail: CI must run them.

#![allow(dead_code)]

use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use stategraph::prelude::*;
use stategraph_postgres::PostgresOptions;
use stategraph_server::{Running, Server};

const URL_VAR: &str = "STATEGRAPH_POSTGRES_URL";
const CA_VAR: &str = "STATEGRAPH_POSTGRES_TLS_CA";

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The URL to test against (with TLS parameters when a CA is given), or `None`
/// after a visible skip notice.
///
/// # Panics
/// Under `CI=true` without a URL.
pub fn postgres_url(test: &str) -> Option<String> {
    let Some(url) = var(URL_VAR) else {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!(
                "{test}: {URL_VAR} is not set, and CI=true requires the PostgreSQL tests to run"
            );
        }
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "notice: {test} skipped: set {URL_VAR}=postgres://user:password@host:5432/database to run it against a PostgreSQL server"
        );
        return None;
    };
    Some(match var(CA_VAR) {
        Some(ca) => tls_url(&url, &ca),
        None => url,
    })
}

/// The plain URL and the CA file of a server with TLS on, or `None` after a visible
/// skip notice when either is missing.
///
/// # Panics
/// Under `CI=true` when either is missing (CI's server has TLS on).
pub fn postgres_tls(test: &str) -> Option<(String, String)> {
    match (var(URL_VAR), var(CA_VAR)) {
        (Some(url), Some(ca)) => Some((url, ca)),
        _ => {
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!("{test}: {URL_VAR} and {CA_VAR} must both be set under CI=true");
            }
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "notice: {test} skipped: set {URL_VAR} to a server with ssl=on and {CA_VAR} to the PEM file of the CA that signed its certificate"
            );
            None
        }
    }
}

/// `url` with `sslmode=verify-full` and the CA file.
pub fn tls_url(url: &str, ca: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}sslmode=verify-full&sslrootcert={ca}")
}

/// A schema name no other test uses.
pub fn fresh_schema(prefix: &str) -> String {
    format!("{prefix}_{}", uuid_like())
}

fn uuid_like() -> String {
    stategraph::checkpoint::new_checkpoint_id().to_lowercase()
}

/// Drops `schema` with everything in it.
pub async fn drop_schema(url: &str, schema: &str) {
    let (client, connection) = tokio_postgres::connect(plain(url), tokio_postgres::NoTls)
        .await
        .expect("connect to drop a test schema");
    let driver = tokio::spawn(connection);
    client
        .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
        .await
        .expect("drop a test schema");
    drop(client);
    let _ = driver.await;
}

/// `url` without the TLS parameters this module adds (for the plain cleanup
/// connection).
pub fn plain(url: &str) -> &str {
    url.split_once("?sslmode=verify-full")
        .or_else(|| url.split_once("&sslmode=verify-full"))
        .map_or(url, |(u, _)| u)
}

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
async fn second(job: &Job) -> JobUpdate {
    step(job, "second").await
}

#[node]
fn question(job: &Job, ctx: &NodeContext) -> Result<JobUpdate, NodeError> {
    if !job.ask {
        return Ok(Job::update());
    }
    let answer: String = ctx.interrupt(json!({ "question": "go on?" }))?;
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

/// `job` and `research` served on `url`, tables in `schema`, a 2 s lease.
pub fn server(url: &str, schema: &str) -> Server {
    Server::new()
        .graph("job", job_graph())
        .graph("research", stategraph_examples::research::graph())
        .postgres_with(url, PostgresOptions::new().schema(schema))
        .lease(Duration::from_secs(2))
}

/// A running server and a client for it.
pub struct Harness {
    pub running: Running,
    pub base: String,
    pub http: reqwest::Client,
}

impl Harness {
    /// Binds `server` on a free port.
    pub async fn start(server: Server) -> Self {
        let running = server.bind("127.0.0.1:0").await.expect("the server starts");
        Self::client(running)
    }

    fn client(running: Running) -> Self {
        let base = format!("http://{}", running.local_addr());
        Harness {
            running,
            base,
            http: reqwest::Client::new(),
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

    /// Waits for a run to end; what it ended with.
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

/// Server-sent events read to the end of the response: `(event, data)` per event.
pub async fn parse_sse(response: reqwest::Response) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let mut buf = String::new();
    let mut body = response.bytes_stream();
    let (mut event, mut data) = (String::new(), String::new());
    while let Some(chunk) = body.next().await {
        buf.push_str(&String::from_utf8_lossy(&chunk.expect("a chunk")));
        while let Some(nl) = buf.find('\n') {
            let line = buf[..nl].trim_end_matches('\r').to_string();
            buf.drain(..=nl);
            if line.is_empty() {
                if !event.is_empty() || !data.is_empty() {
                    let value = serde_json::from_str(&data).unwrap_or(Value::Null);
                    out.push((std::mem::take(&mut event), value));
                    data.clear();
                }
            } else if let Some(v) = line.strip_prefix("event:") {
                event = v.trim_start().to_string();
            } else if let Some(v) = line.strip_prefix("data:") {
                if !data.is_empty() {
                    data.push('\n');
                }
                data.push_str(v.strip_prefix(' ').unwrap_or(v));
            }
        }
    }
    out
}
