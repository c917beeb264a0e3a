//! LangGraph's own clients drive the server, each through a check script of its own
//! that prints one `ok`/`FAIL` line per check:
//!
//! - `langgraph-sdk` (Python): `tests/sdk/acceptance.py` covers assistants, threads,
//!   state and history, streamed, background, joined and stateless runs, every
//!   multitask strategy, the error statuses, the store and API keys, using nothing
//!   but the SDK's client methods;
//! - `RemoteGraph` (Python `langgraph`): `tests/sdk/remote_graph.py`;
//! - `@langchain/langgraph-sdk` (JS, in Node): `tests/js/sdk.cjs`, against the chat
//!   agent of the server example and the demo pipeline;
//! - `@ag-ui/langgraph` (CopilotKit's AG-UI adapter, in Node): `tests/js/ag_ui.cjs`.
//!
//! The Python comes from `STATEGRAPH_SDK_PYTHON` (a python with `langgraph-sdk` and
//! `langgraph`), the JS packages from `STATEGRAPH_JS_MODULES` (a `node_modules`
//! directory with `@langchain/langgraph-sdk` and `@ag-ui/langgraph`); `.ci/run` makes both. Without them a
//! test says so on stderr and passes, except under `CI=true`, where it fails.

use std::process::Stdio;
use std::time::Duration;

use stategraph_examples::agent::{self, Approval};
use stategraph_server::Server;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

const SKIPPED_PYTHON: &str =
    "SKIPPED: set STATEGRAPH_SDK_PYTHON to a python with langgraph-sdk and langgraph (see .ci/run)";
const SKIPPED_JS: &str = "SKIPPED: set STATEGRAPH_JS_MODULES to a node_modules directory with @langchain/langgraph-sdk and @ag-ui/langgraph (see .ci/run)";

/// The key of the second server, which checks the SDK's `api_key`.
const API_KEY: &str = "sdk-acceptance-key";

/// The whole script; each of its checks has its own, shorter limit.
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(300);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn langgraph_sdk_drives_the_server() -> Result<(), Box<dyn std::error::Error>> {
    let Some(python) = sdk_python() else {
        return Ok(());
    };
    let dir = tempfile::tempdir()?;
    let running = Server::new()
        .graph("research", stategraph_examples::research::graph())
        .graph("agent", chat_agent()?)
        .sqlite(dir.path().join("server.sqlite"))
        // The script's webhook receiver listens on loopback.
        .webhooks(stategraph_server::Webhooks::new().allow("127.0.0.1"))
        .bind("127.0.0.1:0")
        .await?;
    let url = format!("http://{}", running.local_addr());
    // A second server of the same graph that wants an API key, for the SDK's `api_key`.
    let keyed = Server::new()
        .graph("research", stategraph_examples::research::graph())
        .sqlite(dir.path().join("keyed.sqlite"))
        .api_key(API_KEY)
        .bind("127.0.0.1:0")
        .await?;
    let keyed_url = format!("http://{}", keyed.local_addr());
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk/acceptance.py");
    let mut command = Command::new(&python);
    command.arg(script).args([&url, &keyed_url, API_KEY]);
    let result = run_checks(command, script).await;
    running.shutdown().await?;
    keyed.shutdown().await?;
    result
}

/// `RemoteGraph` (from the `langgraph` package) runs served graphs alone and as a
/// node of a local graph: `tests/sdk/remote_graph.py`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_graph_runs_served_graphs() -> Result<(), Box<dyn std::error::Error>> {
    let Some(python) = sdk_python() else {
        return Ok(());
    };
    let dir = tempfile::tempdir()?;
    let running = crate::common::with_graphs(Server::new())
        .sqlite(dir.path().join("server.sqlite"))
        .bind("127.0.0.1:0")
        .await?;
    let url = format!("http://{}", running.local_addr());
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk/remote_graph.py");
    let mut command = Command::new(&python);
    command.arg(script).arg(&url);
    let result = run_checks(command, script).await;
    running.shutdown().await?;
    result
}

/// `@langchain/langgraph-sdk` in Node drives the chat agent and the demo pipeline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn langgraph_js_sdk_drives_the_server() -> Result<(), Box<dyn std::error::Error>> {
    node_checks("sdk.cjs").await
}

/// CopilotKit's AG-UI adapter (`@ag-ui/langgraph`'s `LangGraphAgent`) runs the chat
/// agent: a text turn, a tool call, an approval interrupt and its resume.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ag_ui_langgraph_agent_drives_the_server() -> Result<(), Box<dyn std::error::Error>> {
    node_checks("ag_ui.cjs").await
}

/// Runs `tests/js/<script>` in Node against a server of the chat agent (`agent`, and
/// `agent_approval` asking before its tools) and the demo pipeline (`research`).
async fn node_checks(script: &str) -> Result<(), Box<dyn std::error::Error>> {
    let Some(modules) = from_env("STATEGRAPH_JS_MODULES", SKIPPED_JS) else {
        return Ok(());
    };
    let dir = tempfile::tempdir()?;
    let model = agent::ScriptedAssistant::paced(Duration::from_millis(20));
    let running = Server::new()
        .graph("agent", agent::graph(model, Approval::Never)?)
        .graph(
            "agent_approval",
            agent::graph(model, Approval::BeforeTools)?,
        )
        .graph("research", stategraph_examples::research::graph())
        .sqlite(dir.path().join("server.sqlite"))
        .bind("127.0.0.1:0")
        .await?;
    let url = format!("http://{}", running.local_addr());
    let script = format!("{}/tests/js/{script}", env!("CARGO_MANIFEST_DIR"));
    let mut command = Command::new("node");
    command.arg(&script).arg(&url).env("NODE_PATH", &modules);
    let result = run_checks(command, &script).await;
    running.shutdown().await?;
    result
}

/// The python of `STATEGRAPH_SDK_PYTHON`.
fn sdk_python() -> Option<std::ffi::OsString> {
    from_env("STATEGRAPH_SDK_PYTHON", SKIPPED_PYTHON)
}

/// The environment variable `name`; without it, says the test is skipped (a failure
/// under `CI=true`).
fn from_env(name: &str, skipped: &str) -> Option<std::ffi::OsString> {
    let value = std::env::var_os(name).filter(|p| !p.is_empty());
    if value.is_none() {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("{skipped}");
        }
        // Straight to the process's stderr: the test harness hides what passing tests
        // print, and this notice should be seen.
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "{skipped}");
    }
    value
}

/// Runs a check script to its end, printing its lines as they come; fails on a
/// `FAIL` line, a non-zero exit or the time limit.
async fn run_checks(mut command: Command, script: &str) -> Result<(), Box<dyn std::error::Error>> {
    println!("{script}");
    let mut child = command
        .env("PYTHONUNBUFFERED", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start the checks of {script}: {e}"))?;
    let mut stdout = BufReader::new(child.stdout.take().ok_or("no stdout pipe")?).lines();
    let mut stderr = BufReader::new(child.stderr.take().ok_or("no stderr pipe")?).lines();

    // The script's lines are printed as they come (on the test's own thread, so the
    // test harness captures them like any test output).
    let deadline = tokio::time::Instant::now() + SCRIPT_TIMEOUT;
    let mut failed = Vec::new();
    let (mut out_open, mut err_open) = (true, true);
    let mut timed_out = false;
    while out_open || err_open {
        tokio::select! {
            line = stdout.next_line(), if out_open => match line? {
                Some(line) => {
                    if line.starts_with("FAIL ") {
                        failed.push(line.clone());
                    }
                    println!("{line}");
                }
                None => out_open = false,
            },
            line = stderr.next_line(), if err_open => match line? {
                Some(line) => eprintln!("{line}"),
                None => err_open = false,
            },
            () = tokio::time::sleep_until(deadline) => {
                timed_out = true;
                break;
            }
        }
    }
    let status = if timed_out {
        None
    } else {
        tokio::time::timeout_at(deadline, child.wait()).await.ok()
    };
    let Some(status) = status else {
        child.start_kill()?;
        panic!(
            "{script} did not finish within {}s; failed so far: {failed:#?}",
            SCRIPT_TIMEOUT.as_secs()
        );
    };
    let status = status?;
    assert!(
        status.success(),
        "{script} failed ({status}); failed checks: {failed:#?}"
    );
    assert!(
        failed.is_empty(),
        "{script} exited 0 but reported failed checks: {failed:#?}"
    );
    Ok(())
}

/// A tool-calling agent whose scripted model greets in pieces, once per run.
fn chat_agent()
-> Result<stategraph::StateGraph<stategraph_agent::MessagesState>, stategraph_agent::AgentError> {
    let greeting = stategraph::Message::assistant("Hello! How can I help you today?");
    let model = stategraph_agent::ScriptedModel::new(vec![greeting; 8]).piece_size(5);
    stategraph_agent::react_agent(model, stategraph_agent::Tools::new()).build()
}
