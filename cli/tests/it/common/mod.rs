//! Shared by the CLI's integration tests: databases written by real graph runs, and
//! running the built `stategraph` binary.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command as Process, Output, Stdio};

use serde_json::{Value, json};
use stategraph::checkpoint::CheckpointSaver;
use stategraph::prelude::*;
use stategraph_sqlite::SqliteSaver;

/// A ticket worked on in a loop (one `append` item and one `add` per step, so the
/// stored log is mostly deltas), then closed after a human approval.
#[derive(GraphState, Clone, Debug, Default)]
pub struct Ticket {
    pub title: String,
    #[reducer(append)]
    pub log: Vec<String>,
    #[reducer(add)]
    pub steps: u32,
}

/// Steps of work before approval.
pub const WORK_STEPS: u32 = 12;

#[node]
fn triage(_: &Ticket) -> TicketUpdate {
    Ticket::update().log(["triaged"])
}

#[node]
fn work(t: &Ticket) -> TicketUpdate {
    Ticket::update()
        .log([format!("worked {}", t.steps + 1)])
        .steps(1)
}

#[node]
fn approve(t: &Ticket, ctx: &NodeContext) -> Result<TicketUpdate, NodeError> {
    let close: bool =
        ctx.interrupt(json!({ "question": "close this ticket?", "title": t.title }))?;
    Ok(Ticket::update().log([if close { "closed" } else { "reopened" }]))
}

/// The ticket graph, checkpointing to `saver`.
pub fn ticket_graph(saver: impl CheckpointSaver) -> CompiledGraph<Ticket> {
    StateGraph::<Ticket>::new()
        .add_node(triage)
        .add_node(work)
        .add_node(approve)
        .add_edge(START, triage)
        .add_edge(triage, work)
        .add_conditional_edges(
            work,
            |t: &Ticket| {
                if t.steps < WORK_STEPS {
                    Route::to(work)
                } else {
                    Route::to(approve)
                }
            },
            (work, approve),
        )
        .add_edge(approve, END)
        .compile_with(CompileOptions::new().checkpointer(saver))
        .unwrap()
}

/// Writes two ticket threads to `saver`: `ticket-open` paused at the approval,
/// `ticket-done` approved and finished.
pub async fn write_tickets(saver: impl CheckpointSaver) -> CompiledGraph<Ticket> {
    let graph = ticket_graph(saver);
    for (thread, title) in [("ticket-open", "printer on fire"), ("ticket-done", "typo")] {
        let config = RunConfig::new().thread(thread);
        let paused = graph
            .invoke(Ticket::update().title(title), &config)
            .await
            .unwrap();
        assert_eq!(paused.interrupts.len(), 1);
        if thread == "ticket-done" {
            let done = graph.invoke(Command::resume(true), &config).await.unwrap();
            assert!(done.interrupts.is_empty());
        }
    }
    graph
}

#[node]
fn jammed(_: &Ticket) -> Result<TicketUpdate, NodeError> {
    Err(NodeError::msg("the printer is jammed"))
}

/// Writes two more threads to `saver`: `ticket-failed`, whose second step's node
/// failed, and `ticket-paused`, stopped at a breakpoint before its work starts.
pub async fn write_stopped_tickets(saver: impl CheckpointSaver + Clone) {
    let failing = StateGraph::<Ticket>::new()
        .add_node(triage)
        .add_node(jammed)
        .add_edge(START, triage)
        .add_edge(triage, jammed)
        .add_edge(jammed, END)
        .compile_with(CompileOptions::new().checkpointer(saver.clone()))
        .unwrap();
    let config = RunConfig::new().thread("ticket-failed");
    let failed = failing.invoke(Ticket::update().title("jam"), &config).await;
    assert!(failed.is_err());

    let paused = StateGraph::<Ticket>::new()
        .add_node(triage)
        .add_node(work)
        .add_edge(START, triage)
        .add_edge(triage, work)
        .add_edge(work, END)
        .compile_with(
            CompileOptions::new()
                .checkpointer(saver)
                .interrupt_before([work]),
        )
        .unwrap();
    let config = RunConfig::new().thread("ticket-paused");
    paused
        .invoke(Ticket::update().title("paper"), &config)
        .await
        .unwrap();
}

/// The main demo's thread id in [`Fixture::with_demo`].
pub const DEMO_THREAD: &str = "research-1";

/// A temporary SQLite file written by real runs.
pub struct Fixture {
    _dir: tempfile::TempDir,
    pub db: PathBuf,
}

impl Fixture {
    /// The two ticket threads.
    pub async fn tickets() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("threads.sqlite");
        write_tickets(SqliteSaver::open(&db).unwrap()).await;
        Self { _dir: dir, db }
    }

    /// The ticket threads and a thread of the main demo (the research pipeline, run
    /// to the end with its approval answered automatically).
    pub async fn with_demo() -> Self {
        let fixture = Self::tickets().await;
        let options = stategraph_examples::research::Options {
            db: fixture.db.clone(),
            thread: Some(DEMO_THREAD.into()),
            fresh: true,
            yes: true,
        };
        let mut transcript = Vec::new();
        stategraph_examples::research::run(&options, &mut transcript)
            .await
            .unwrap();
        fixture
    }

    /// [`Fixture::with_demo`], and the threads of [`write_stopped_tickets`]: one of
    /// each status.
    pub async fn with_every_status() -> Self {
        let fixture = Self::with_demo().await;
        write_stopped_tickets(SqliteSaver::open(&fixture.db).unwrap()).await;
        fixture
    }

    /// Runs `stategraph --db <this file> args...`.
    pub fn run(&self, args: &[&str]) -> Run {
        let mut all = vec!["--db", self.db.to_str().unwrap()];
        all.extend_from_slice(args);
        stategraph(&all)
    }
}

/// What a run of the binary did.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Asserts success and parses standard output as JSON.
    pub fn json(&self) -> Value {
        assert_eq!(self.code, 0, "stderr: {}", self.stderr);
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.stdout))
    }

    /// Asserts success and returns standard output.
    pub fn ok(&self) -> &str {
        assert_eq!(self.code, 0, "stderr: {}", self.stderr);
        &self.stdout
    }

    /// Asserts failure with `code` and an error on standard error (nothing on
    /// standard output); returns the error text.
    pub fn fails(&self, code: i32) -> &str {
        assert_eq!(
            self.code, code,
            "stdout: {}\nstderr: {}",
            self.stdout, self.stderr
        );
        assert!(self.stdout.is_empty(), "stdout: {}", self.stdout);
        assert!(!self.stderr.trim().is_empty());
        &self.stderr
    }
}

/// Runs the built `stategraph` binary with standard input closed (no terminal), and
/// without the environment variables it reads (`STATEGRAPH_POSTGRES_URL`, `COLUMNS`),
/// so the test's environment does not change what it does.
pub fn stategraph(args: &[&str]) -> Run {
    stategraph_with_env(args, &[])
}

/// Runs the built `stategraph` binary as [`stategraph`] does, with `env` set.
pub fn stategraph_with_env(args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut process = Process::new(env!("CARGO_BIN_EXE_stategraph"));
    process
        .args(args)
        .env_remove(stategraph_cli::URL_ENV)
        .env_remove("COLUMNS")
        .stdin(Stdio::null());
    for (key, value) in env {
        process.env(key, value);
    }
    let out: Output = process.output().unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// The channel values of `state` as the runtime encodes them, by channel name.
pub fn encoded<S: GraphState>(state: &S) -> serde_json::Map<String, Value> {
    S::CHANNELS
        .iter()
        .filter_map(|c| {
            let value = state.encode_channel(c.index).unwrap()?;
            Some((c.name.to_string(), value))
        })
        .collect()
}

/// A GET over plain HTTP/1.1: the status, the head (lowercase) and the body.
pub fn get(addr: &str, path: &str) -> (u16, String, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, head.to_ascii_lowercase(), body.to_string())
}

/// A `stategraph studio` process, killed when dropped.
pub struct Served(std::process::Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `stategraph <target> studio --addr 127.0.0.1:0`; the process and the
/// address it printed (`studio at http://ADDR/studio`).
pub fn studio(target: &[&str]) -> (Served, String) {
    let child = Process::new(env!("CARGO_BIN_EXE_stategraph"))
        .args(target)
        .args(["studio", "--addr", "127.0.0.1:0"])
        .env_remove(stategraph_cli::URL_ENV)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut served = Served(child);
    let mut line = String::new();
    BufReader::new(served.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("studio at http://")
        .and_then(|rest| rest.strip_suffix("/studio"))
        .unwrap_or_else(|| panic!("printed {line:?}"))
        .to_string();
    assert!(
        addr.starts_with("127.0.0.1:") && !addr.ends_with(":0"),
        "{addr}"
    );
    (served, addr)
}
