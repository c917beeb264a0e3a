//! The multi-process drills: real server processes on one database, faults injected
//! from outside, and what every thread ends with checked against the same runs made
//! in memory without a fault.
//!
//! - `kill`: three processes on PostgreSQL, one at a time killed with SIGKILL in the
//!   middle of its runs and started again.
//! - `pause`: workers stopped with SIGSTOP for two to three leases in the middle of
//!   their runs and continued — three processes on PostgreSQL, then one process with
//!   two workers on SQLite. Every step logs when it starts and ends; no run's step
//!   starts after the run ended, and no step of a run runs on two workers at once.
//! - `create`: a process killed while 200 thread and run creations are in flight,
//!   eight times, on PostgreSQL and on SQLite: every thread with a run names its
//!   graph and shows its run's work through the API.
//! - `webhook`: a run's webhook call to a receiver that fails twice and is then
//!   slow, its process killed at the first call and in the middle of the slow one:
//!   one idempotency key, the call made.
//! - `cron`: a cron every second for 30 s while each process (three on PostgreSQL,
//!   two on SQLite) is killed once and started again: every tick has exactly one run.
//!
//! This test binary is its own server process: started with `SG_DRILL_CHILD` set,
//! `main` serves instead of testing (a `harness = false` test), so the drills need no
//! binary in the library package.

#[path = "../common/mod.rs"]
mod common;
mod create;
mod cron;
mod kill;
mod pause;
#[path = "../pg/mod.rs"]
mod pg;
mod tables;
mod webhook;

use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use stategraph::checkpoint::ListOptions;
use stategraph::prelude::*;
use stategraph_postgres::PostgresOptions;
use stategraph_server::{Server, Webhooks};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

const WORKERS_PER_PROCESS: usize = 2;

/// What a drill run records: each step appends `step@tag`.
#[derive(GraphState, schemars::JsonSchema, Clone, Debug, Default)]
pub struct Drill {
    /// The run's tag (its input sets it).
    pub tag: String,
    /// The run's thread (its input sets it), for the effect log.
    pub who: String,
    /// How long each step sleeps.
    pub delay_ms: u64,
    /// `step@tag` for every step that finished.
    #[reducer(append)]
    pub done: Vec<String>,
}

/// Appends one line to the effect log, if the drill keeps one.
fn effect(what: &str, s: &Drill, name: &str) {
    let Ok(path) = std::env::var("SG_DRILL_EFFECTS") else {
        return;
    };
    let proc = std::env::var("SG_DRILL_CHILD").unwrap_or_default();
    let at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_micros();
    let line = format!("{what} {} {} {name} {proc} {at}\n", s.who, s.tag);
    // One write of a short line to a file opened for appending lands whole.
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
    {
        let _ = f.write_all(line.as_bytes());
    }
}

/// Logs a step's end when it is dropped: when it returns, and when its run is
/// stopped in the middle of it too.
struct Running<'a>(&'a Drill, &'a str);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        effect("end", self.0, self.1);
    }
}

async fn step(s: &Drill, name: &str) -> DrillUpdate {
    effect("start", s, name);
    let _running = Running(s, name);
    tokio::time::sleep(Duration::from_millis(s.delay_ms)).await;
    Drill::update().done([format!("{name}@{}", s.tag)])
}

#[node]
async fn s1(s: &Drill) -> DrillUpdate {
    step(s, "s1").await
}

#[node]
async fn s2(s: &Drill) -> DrillUpdate {
    step(s, "s2").await
}

#[node]
async fn s3(s: &Drill) -> DrillUpdate {
    step(s, "s3").await
}

#[node]
async fn s4(s: &Drill) -> DrillUpdate {
    step(s, "s4").await
}

fn drill_graph() -> StateGraph<Drill> {
    let mut g = StateGraph::<Drill>::new();
    g.add_node(s1)
        .add_node(s2)
        .add_node(s3)
        .add_node(s4)
        .add_edge(START, s1)
        .add_edge(s1, s2)
        .add_edge(s2, s3)
        .add_edge(s3, s4)
        .add_edge(s4, END);
    g
}

/// One step: what the creation drill's runs do.
fn quick_graph() -> StateGraph<Drill> {
    let mut g = StateGraph::<Drill>::new();
    g.add_node(s1).add_edge(START, s1).add_edge(s1, END);
    g
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    if let Ok(name) = std::env::var("SG_DRILL_CHILD") {
        runtime.block_on(serve(name));
        return;
    }
    let url = pg::postgres_url("drills");
    // The drills of a wave run at once (each on its own schema or file, with its own
    // server processes): they spend most of their time waiting on leases and
    // pauses. The second wave's processes would take more PostgreSQL connections
    // than a default server has beside the first's.
    let waves: [&[(&str, Which)]; 2] = [
        &[
            ("kill_on_postgres", Which::KillPostgres),
            ("pause_on_postgres", Which::PausePostgres),
            ("pause_on_sqlite", Which::PauseSqlite),
            ("kill_while_creating_on_postgres", Which::CreatePostgres),
            ("kill_while_creating_on_sqlite", Which::CreateSqlite),
            ("webhook_on_postgres", Which::WebhookPostgres),
            ("webhook_on_sqlite", Which::WebhookSqlite),
            ("cron_on_sqlite", Which::CronSqlite),
        ],
        &[("cron_on_postgres", Which::CronPostgres)],
    ];
    let mut failed = Vec::new();
    for wave in waves {
        let mut running = Vec::new();
        for &(name, which) in wave {
            // `SG_DRILL_ONLY=pause` runs the drills whose names contain `pause`.
            if std::env::var("SG_DRILL_ONLY").is_ok_and(|only| !name.contains(&only)) {
                continue;
            }
            let Some(drill) = drill_of(which, url.as_deref()) else {
                println!("test {name} ... skipped");
                continue;
            };
            let started = Instant::now();
            running.push((
                name,
                runtime.spawn(async move { (drill.await, started.elapsed()) }),
            ));
        }
        for (name, handle) in running {
            match runtime.block_on(handle) {
                Ok((stats, took)) => {
                    println!("test {name} ... ok ({stats}, {:.1} s)", took.as_secs_f64());
                }
                // Its panic message is above, on stderr.
                Err(_) => {
                    println!("test {name} ... FAILED");
                    failed.push(name);
                }
            }
        }
    }
    assert!(failed.is_empty(), "drills failed: {failed:?}");
}

type DrillRun = std::pin::Pin<Box<dyn Future<Output = String> + Send>>;

/// The drill `which` names; `None` for a PostgreSQL drill without a URL.
fn drill_of(which: Which, url: Option<&str>) -> Option<DrillRun> {
    Some(match (which, url) {
        (Which::KillPostgres, Some(url)) => Box::pin(kill::drill(url.to_string())),
        (Which::CreatePostgres, Some(url)) => {
            Box::pin(create::drill(Backend::postgres(url, "sg_srv_create")))
        }
        (Which::CreateSqlite, _) => Box::pin(create::drill(Backend::sqlite())),
        (Which::PausePostgres, Some(url)) => {
            Box::pin(pause::drill(Backend::postgres(url, "sg_srv_pause")))
        }
        (Which::PauseSqlite, _) => Box::pin(pause::drill(Backend::sqlite())),
        (Which::CronPostgres, Some(url)) => {
            Box::pin(cron::drill(Backend::postgres(url, "sg_srv_cron_drill"), 3))
        }
        (Which::CronSqlite, _) => Box::pin(cron::drill(Backend::sqlite(), 2)),
        (Which::WebhookPostgres, Some(url)) => {
            Box::pin(webhook::drill(Backend::postgres(url, "sg_srv_hook_drill")))
        }
        (Which::WebhookSqlite, _) => Box::pin(webhook::drill(Backend::sqlite())),
        (_, None) => return None,
    })
}

/// Which drill.
#[derive(Clone, Copy)]
enum Which {
    KillPostgres,
    PausePostgres,
    PauseSqlite,
    CreatePostgres,
    CreateSqlite,
    CronPostgres,
    CronSqlite,
    WebhookPostgres,
    WebhookSqlite,
}

/// Where the drill's processes keep their runs.
#[derive(Clone)]
enum Backend {
    Postgres { url: String, schema: String },
    Sqlite { dir: std::path::PathBuf },
}

impl Backend {
    fn postgres(url: &str, prefix: &str) -> Self {
        Self::Postgres {
            url: url.to_string(),
            schema: pg::fresh_schema(prefix),
        }
    }

    fn sqlite() -> Self {
        let at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        let dir =
            std::env::temp_dir().join(format!("stategraph-drill-{}-{at}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a directory for the drill's database");
        Self::Sqlite { dir }
    }

    /// Where the effect log goes.
    fn effects(&self) -> std::path::PathBuf {
        match self {
            Self::Postgres { schema, .. } => std::env::temp_dir().join(format!("{schema}.effects")),
            Self::Sqlite { dir } => dir.join("effects"),
        }
    }

    async fn clean_up(&self) {
        match self {
            Self::Postgres { url, schema } => {
                pg::drop_schema(url, schema).await;
                let _ = std::fs::remove_file(self.effects());
            }
            Self::Sqlite { dir } => {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
    }
}

/// The child: serves the drill graph until killed; prints its address.
async fn serve(name: String) {
    let lease = std::env::var("SG_DRILL_LEASE_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(kill::LEASE, Duration::from_millis);
    let server = Server::new()
        .graph("drill", drill_graph())
        .graph("quick", quick_graph())
        .lease(lease)
        .webhooks(
            Webhooks::new()
                .allow("127.0.0.1")
                .timeout(Duration::from_secs(2)),
        )
        .workers(WORKERS_PER_PROCESS)
        .worker_id(name);
    let server = match std::env::var("SG_DRILL_SQLITE") {
        Ok(path) => server.sqlite(path),
        Err(_) => {
            let url = std::env::var("SG_DRILL_URL").expect("SG_DRILL_URL");
            let schema = std::env::var("SG_DRILL_SCHEMA").expect("SG_DRILL_SCHEMA");
            server.postgres_with(url, PostgresOptions::new().schema(schema))
        }
    };
    let running = server
        .bind("127.0.0.1:0")
        .await
        .expect("the drill server starts");
    println!("ADDR {}", running.local_addr());
    std::future::pending::<()>().await;
}

/// One server process.
struct Proc {
    child: Child,
    base: String,
    /// Its worker-id prefix (`p{index}g{generation}`).
    name: String,
}

impl Proc {
    fn pid(&self) -> u32 {
        self.child.id().expect("a running process")
    }
}

async fn spawn(backend: &Backend, index: usize, generation: usize, lease: Duration) -> Proc {
    let name = format!("p{index}g{generation}");
    let mut command = Command::new(std::env::current_exe().expect("the test binary"));
    command
        .env("SG_DRILL_CHILD", &name)
        .env("SG_DRILL_LEASE_MS", lease.as_millis().to_string())
        .env("SG_DRILL_EFFECTS", backend.effects());
    match backend {
        Backend::Postgres { url, schema } => {
            // Its sessions carry its name, so the drill can wait for them to end.
            let sep = if url.contains('?') { '&' } else { '?' };
            let url = format!("{url}{sep}application_name={}", session_name(schema, &name));
            command
                .env("SG_DRILL_URL", url)
                .env("SG_DRILL_SCHEMA", schema);
        }
        Backend::Sqlite { dir } => {
            command.env("SG_DRILL_SQLITE", dir.join("drill.sqlite"));
        }
    }
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("a server process");
    let stdout = child.stdout.take().expect("its stdout");
    let mut lines = BufReader::new(stdout).lines();
    let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
        .await
        .expect("the server process starts within a minute")
        .expect("its stdout")
        .expect("an address line");
    let addr = line.strip_prefix("ADDR ").expect("ADDR <address>");
    Proc {
        child,
        base: format!("http://{addr}"),
        name,
    }
}

/// The `application_name` of the sessions of process `name`.
fn session_name(schema: &str, name: &str) -> String {
    format!("{schema}_{name}")
}

/// xorshift64*: the victims and pauses, the same on every run of the drill.
struct Seeded(u64);

impl Seeded {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

fn tag(k: usize) -> String {
    format!("r{k}")
}

/// Creates `threads` threads and queues `runs` runs on each, through every process
/// in turn.
async fn queue_runs(
    http: &reqwest::Client,
    procs: &[Proc],
    threads: &[String],
    runs: usize,
    step_ms: u64,
) {
    for (i, t) in threads.iter().enumerate() {
        let (status, body) = common::post(
            http,
            &format!("{}/threads", procs[i % procs.len()].base),
            json!({ "thread_id": t }),
        )
        .await;
        assert_eq!(status, 200, "{body}");
    }
    for k in 0..runs {
        for (i, t) in threads.iter().enumerate() {
            let p = &procs[(i + k) % procs.len()];
            let (status, body) = common::post(
                http,
                &format!("{}/threads/{t}/runs", p.base),
                json!({
                    "assistant_id": "drill",
                    "input": { "tag": tag(k), "who": t, "delay_ms": step_ms },
                    "multitask_strategy": "enqueue",
                }),
            )
            .await;
            assert_eq!(status, 200, "{body}");
        }
    }
}

/// Every thread's state holds every step of every run exactly once, in order, and
/// its history has as many checkpoints as the same runs make in memory.
async fn check_threads(http: &reqwest::Client, procs: &[Proc], threads: &[String], runs: usize) {
    let reference = drill_graph()
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .expect("the drill graph compiles");
    let thread = RunConfig::new().thread("reference");
    for k in 0..runs {
        reference
            .invoke(
                Drill::update().tag(tag(k)).who("reference").delay_ms(0),
                &thread,
            )
            .await
            .expect("a reference run");
    }
    let expected_checkpoints = reference
        .get_state_history(&thread, &ListOptions::default())
        .await
        .expect("the reference history")
        .len();
    let expected_done: Vec<Value> = (0..runs)
        .flat_map(|k| ["s1", "s2", "s3", "s4"].map(|s| json!(format!("{s}@{}", tag(k)))))
        .collect();
    for (i, t) in threads.iter().enumerate() {
        let base = &procs[i % procs.len()].base;
        let state = http
            .get(format!("{base}/threads/{t}/state"))
            .send()
            .await
            .expect("a state");
        let (status, state) = common::read(state).await;
        assert_eq!(status, 200, "{state}");
        assert_eq!(
            state["values"]["done"],
            Value::Array(expected_done.clone()),
            "thread {t}: every step of every run exactly once, in order"
        );
        let (status, history) = common::post(
            http,
            &format!("{base}/threads/{t}/history"),
            json!({ "limit": 1000 }),
        )
        .await;
        assert_eq!(status, 200, "{history}");
        assert_eq!(
            history.as_array().map(Vec::len),
            Some(expected_checkpoints),
            "thread {t}: its checkpoints"
        );
    }
}
