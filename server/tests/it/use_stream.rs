//! A chat page built with React and `useStream` from `@langchain/langgraph-sdk/react`
//! (`tests/js/use_stream.jsx`, bundled here with esbuild) in headless Chromium, against
//! the chat agent that asks before it runs a tool: a message is sent, the answer
//! streams in, the tool call shows, the interrupt (read from `values.__interrupt__`)
//! is approved, and a reload in the middle of the answer rejoins the running stream.
//!
//! Needs the browser (see `browser.rs`) and `STATEGRAPH_JS_MODULES` with `react`,
//! `react-dom`, `esbuild` and `@langchain/langgraph-sdk` (`.ci/run` installs them).

use std::path::Path;
use std::time::{Duration, Instant};

use axum::response::Html;
use serde_json::Value;
use stategraph_examples::agent::{self, Approval};
use stategraph_server::Server;

use crate::browser::{Browser, PATIENCE, browser_binaries};

const SKIPPED: &str = "SKIPPED: the useStream page test needs STATEGRAPH_JS_MODULES with react, react-dom, esbuild and @langchain/langgraph-sdk (see .ci/run)";

/// Bundles the page with esbuild into `out/app.js`.
async fn bundle(modules: &Path, out: &Path) {
    let page = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/js/use_stream.jsx");
    let status = tokio::process::Command::new(modules.join(".bin/esbuild"))
        .arg(page)
        .args([
            "--bundle",
            "--format=iife",
            "--jsx=automatic",
            "--log-level=warning",
        ])
        .arg("--define:process.env.NODE_ENV=\"production\"")
        .arg(format!("--outfile={}", out.join("app.js").display()))
        .env("NODE_PATH", modules)
        .status()
        .await
        .expect("esbuild runs");
    assert!(status.success(), "esbuild failed to bundle {page}");
}

/// Serves the bundled page on a port of its own (another origin than the API's).
async fn serve_page(dir: &Path) -> String {
    let script = std::fs::read_to_string(dir.join("app.js")).expect("the bundle");
    let app = axum::Router::new()
        .route(
            "/",
            axum::routing::get(|| async {
                Html("<!doctype html><meta charset=utf-8><title>chat</title><div id=root></div><script src=/app.js></script>")
            }),
        )
        .route(
            "/app.js",
            axum::routing::get(move || {
                let script = script.clone();
                async move { ([("content-type", "text/javascript")], script) }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port for the page");
    let port = listener.local_addr().expect("its address").port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://localhost:{port}")
}

/// The page's messages as `(type, text)`.
async fn messages(b: &Browser) -> Vec<(String, String)> {
    let v = b
        .js("return [...document.querySelectorAll('#messages .message')].map(m => [m.dataset.type, m.textContent]);")
        .await;
    v.as_array()
        .map(|items| {
            items
                .iter()
                .map(|i| {
                    (
                        i[0].as_str().unwrap_or_default().to_string(),
                        i[1].as_str().unwrap_or_default().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The status of the thread's latest run, from the API.
async fn latest_run_status(http: &reqwest::Client, api: &str, thread: &str) -> String {
    let runs: Value = http
        .get(format!("{api}/threads/{thread}/runs"))
        .send()
        .await
        .expect("runs")
        .json()
        .await
        .expect("runs JSON");
    runs[0]["status"].as_str().unwrap_or_default().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_use_stream_page_chats_streams_approves_and_rejoins_after_a_reload() {
    let Some((chromium, driver)) = browser_binaries() else {
        return;
    };
    let Some(modules) = std::env::var_os("STATEGRAPH_JS_MODULES").filter(|m| !m.is_empty()) else {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("{SKIPPED}");
        }
        eprintln!("{SKIPPED}");
        return;
    };
    let page_dir = tempfile::tempdir().expect("a dir for the page");
    bundle(Path::new(&modules), page_dir.path()).await;
    let page = serve_page(page_dir.path()).await;
    let db = tempfile::tempdir().expect("a dir for the database");
    // Words come every 150 ms: the answer takes seconds, long enough to reload in it.
    let model = agent::ScriptedAssistant::paced(Duration::from_millis(150));
    let running = Server::new()
        .graph(
            "agent_approval",
            agent::graph(model, Approval::BeforeTools).expect("the agent"),
        )
        .sqlite(db.path().join("server.sqlite"))
        .bind("127.0.0.1:0")
        .await
        .expect("the server starts");
    let api = format!("http://{}", running.local_addr());
    let http = reqwest::Client::new();
    let b = Browser::start(&chromium, &driver).await;
    b.open(&format!("{page}/?api={api}&assistant=agent_approval"))
        .await;

    // A message: the model's first words stream in, then its tool call shows.
    b.fill("#text", "What should I pack for Oslo tomorrow?")
        .await;
    b.wait_css("#send button")
        .await
        .click()
        .await
        .expect("sent");
    b.wait_until(
        "the tool call",
        "document.querySelector('.message[data-type=ai] .tool-call[data-name=get_weather]')",
    )
    .await;
    // The interrupt, from `values.__interrupt__`, asks before the tool runs.
    b.wait_until(
        "the approval request",
        "document.querySelector('#interrupt')",
    )
    .await;
    b.wait_until(
        "the run to pause",
        "document.querySelector('#status').textContent === 'idle'",
    )
    .await;
    let asked = b.text("#interrupt pre").await;
    assert!(asked.contains("get_weather"), "{asked}");
    b.shot("use-stream-interrupt").await;
    let thread = b
        .js("return sessionStorage.getItem('thread');")
        .await
        .as_str()
        .map(str::to_string)
        .expect("the page keeps its thread id");

    // Approve: the tool runs and the answer streams in, word by word.
    b.wait_css("#approve")
        .await
        .click()
        .await
        .expect("approved");
    let started = Instant::now();
    let mut seen: Vec<String> = Vec::new();
    loop {
        let now = messages(&b).await;
        if let Some((_, last)) = now
            .last()
            .filter(|(t, c)| t == "ai" && c.starts_with("Here"))
        {
            if !seen.contains(last) {
                seen.push(last.clone());
            }
            if seen.len() >= 3 {
                break;
            }
        }
        assert!(started.elapsed() < PATIENCE, "no streamed answer: {now:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        seen.windows(2)
            .all(|w| w[1].starts_with(w[0].as_str()) && w[1].len() > w[0].len()),
        "the answer grows word by word: {seen:?}"
    );
    // Reload in the middle of it: the page rejoins the run still going.
    assert_eq!(latest_run_status(&http, &api, &thread).await, "running");
    b.client.refresh().await.expect("reloaded");
    b.wait_until(
        "the whole answer after the reload",
        "[...document.querySelectorAll('.message[data-type=ai]')].some(m => m.textContent.endsWith('pack a rain jacket.'))",
    )
    .await;
    b.wait_until(
        "the run to end",
        "document.querySelector('#status').textContent === 'idle'",
    )
    .await;
    b.shot("use-stream-answer").await;
    let end = messages(&b).await;
    let kinds: Vec<&str> = end.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(kinds, ["human", "ai", "tool", "ai"], "{end:?}");
    assert!(end[2].1.contains("rain jacket"), "{end:?}");
    assert_eq!(b.text("#error").await, "");
    assert!(
        b.all("#interrupt").await.is_empty(),
        "the interrupt is gone"
    );
    assert_eq!(latest_run_status(&http, &api, &thread).await, "success");
    running.shutdown().await.expect("the server stops");
}
