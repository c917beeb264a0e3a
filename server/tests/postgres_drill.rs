//! The multi-process crash drill: three server processes on one PostgreSQL database,
//! 200 runs over 50 threads (four queued per thread), and one process at a time
//! killed with SIGKILL in the middle of its runs — at least ten times, the victim
//! chosen by a seeded generator — and started again. At the end every run is a
//! success, each thread's state holds every step of every run exactly once (a
//! finished step executed again would append twice), in order, and its history has
//! as many checkpoints as the same runs make in memory without a crash.
//!
//! This test binary is its own server process: started with `SG_DRILL_CHILD` set,
//! `main` serves instead of testing (a `harness = false` test), so the drill needs no
//! binary in the library package.

mod common;
mod pg;

use std::collections::BTreeSet;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use stategraph::checkpoint::ListOptions;
use stategraph::prelude::*;
use stategraph_postgres::PostgresOptions;
use stategraph_server::Server;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

const PROCESSES: usize = 3;
const THREADS: usize = 50;
const RUNS_PER_THREAD: usize = 4;
const WORKERS_PER_PROCESS: usize = 2;
const STEP_MS: u64 = 150;
const LEASE: Duration = Duration::from_millis(1500);
const KILLS_MID_RUN: usize = 10;
const SEED: u64 = 0x5EED_2026_D011;

/// What a drill run records: each step appends `step@tag`.
#[derive(GraphState, schemars::JsonSchema, Clone, Debug, Default)]
pub struct Drill {
    /// The run's tag (its input sets it).
    pub tag: String,
    /// How long each step sleeps.
    pub delay_ms: u64,
    /// `step@tag` for every step that finished.
    #[reducer(append)]
    pub done: Vec<String>,
}

async fn step(s: &Drill, name: &str) -> DrillUpdate {
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
    let Some(url) = pg::postgres_url("postgres_drill") else {
        println!("test postgres_drill ... skipped");
        return;
    };
    let started = Instant::now();
    let stats = runtime.block_on(drill(url));
    println!(
        "test postgres_drill ... ok ({stats}, {:.1} s)",
        started.elapsed().as_secs_f64()
    );
}

/// The child: serves the drill graph until killed; prints its address.
async fn serve(name: String) {
    let url = std::env::var("SG_DRILL_URL").expect("SG_DRILL_URL");
    let schema = std::env::var("SG_DRILL_SCHEMA").expect("SG_DRILL_SCHEMA");
    let running = Server::new()
        .graph("drill", drill_graph())
        .postgres_with(url, PostgresOptions::new().schema(schema))
        .lease(LEASE)
        .workers(WORKERS_PER_PROCESS)
        .worker_id(name)
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

async fn spawn(url: &str, schema: &str, index: usize, generation: usize) -> Proc {
    let name = format!("p{index}g{generation}");
    // Its sessions carry its name, so the drill can wait for them to end.
    let sep = if url.contains('?') { '&' } else { '?' };
    let url = format!("{url}{sep}application_name={}", session_name(schema, &name));
    let mut child = Command::new(std::env::current_exe().expect("the test binary"))
        .env("SG_DRILL_CHILD", &name)
        .env("SG_DRILL_URL", url)
        .env("SG_DRILL_SCHEMA", schema)
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

async fn sql(url: &str, schema: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(pg::plain(url), tokio_postgres::NoTls)
        .await
        .expect("a connection for the drill's checks");
    tokio::spawn(connection);
    client
        .batch_execute(&format!("SET search_path TO \"{schema}\""))
        .await
        .expect("search_path");
    client
}

async fn count(db: &tokio_postgres::Client, sql: &str, param: &str) -> i64 {
    db.query_one(sql, &[&param])
        .await
        .expect("a count")
        .get::<_, i64>(0)
}

fn tag(k: usize) -> String {
    format!("r{k}")
}

async fn drill(url: String) -> String {
    let schema = pg::fresh_schema("sg_srv_drill");
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("a client");
    // All three start together: the tables are created once, under the lock.
    let mut procs: Vec<Proc> =
        futures::future::join_all((0..PROCESSES).map(|i| spawn(&url, &schema, i, 0))).await;
    let mut generations = [0usize; PROCESSES];
    let db = sql(&url, &schema).await;

    // 50 threads and 200 runs, through every process in turn.
    let threads: Vec<String> = (0..THREADS).map(|t| format!("drill-{t}")).collect();
    for (i, t) in threads.iter().enumerate() {
        let (status, body) = common::post(
            &http,
            &format!("{}/threads", procs[i % PROCESSES].base),
            json!({ "thread_id": t }),
        )
        .await;
        assert_eq!(status, 200, "{body}");
    }
    for k in 0..RUNS_PER_THREAD {
        for (i, t) in threads.iter().enumerate() {
            let p = &procs[(i + k) % PROCESSES];
            let (status, body) = common::post(
                &http,
                &format!("{}/threads/{t}/runs", p.base),
                json!({
                    "assistant_id": "drill",
                    "input": { "tag": tag(k), "delay_ms": STEP_MS },
                    "multitask_strategy": "enqueue",
                }),
            )
            .await;
            assert_eq!(status, 200, "{body}");
        }
    }

    // Kill a process holding running runs, start it again; until ten kills caught
    // runs in the middle.
    let mut rng = Seeded(SEED);
    let mut kills = 0usize;
    let mut mid_run = 0usize;
    let mut interrupted: BTreeSet<String> = BTreeSet::new();
    while mid_run < KILLS_MID_RUN {
        assert!(
            kills < 4 * KILLS_MID_RUN,
            "{kills} kills caught only {mid_run} processes in the middle of runs"
        );
        let victim = usize::try_from(rng.next() % PROCESSES as u64).unwrap_or(0);
        let prefix = format!("{}/%", procs[victim].name);
        let waiting = Instant::now();
        loop {
            let left = count(
                &db,
                "SELECT count(*) FROM sg_runs WHERE status IN ('pending', 'running') AND $1 <> ''",
                "x",
            )
            .await;
            assert!(
                left > 0,
                "the runs all ended after {kills} kills ({mid_run} mid-run): the drill needs slower runs"
            );
            let held = count(
                &db,
                "SELECT count(*) FROM sg_runs WHERE status = 'running' AND worker LIKE $1",
                &prefix,
            )
            .await;
            if held > 0 || waiting.elapsed() > Duration::from_secs(3) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // Somewhere inside a step.
        tokio::time::sleep(Duration::from_millis(rng.next() % STEP_MS)).await;
        procs[victim].child.kill().await.expect("SIGKILL");
        kills += 1;
        // A commit it sent just before dying may still land: wait for its sessions
        // to end, so what it held is final.
        let session = session_name(&schema, &procs[victim].name);
        let gone = Instant::now();
        while count(
            &db,
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
            &session,
        )
        .await
            > 0
        {
            assert!(
                gone.elapsed() < Duration::from_secs(10),
                "the killed process's sessions linger"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // Its runs still marked running are ones it died in: nobody else can have
        // touched them before their lease expires.
        let held: Vec<String> = db
            .query(
                "SELECT run_id FROM sg_runs WHERE status = 'running' AND worker LIKE $1",
                &[&prefix],
            )
            .await
            .expect("the victim's runs")
            .iter()
            .map(|r| r.get(0))
            .collect();
        if !held.is_empty() {
            mid_run += 1;
            interrupted.extend(held);
        }
        generations[victim] += 1;
        procs[victim] = spawn(&url, &schema, victim, generations[victim]).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // Everything ends.
    let waiting = Instant::now();
    loop {
        let left = count(
            &db,
            "SELECT count(*) FROM sg_runs WHERE status IN ('pending', 'running') AND $1 <> ''",
            "x",
        )
        .await;
        if left == 0 {
            break;
        }
        assert!(
            waiting.elapsed() < Duration::from_secs(120),
            "{left} runs still pending or running two minutes after the last kill"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Every run succeeded, once; the runs a killed process held were taken over.
    let rows = db
        .query(
            "SELECT run_id, status, attempt FROM sg_runs ORDER BY seq",
            &[],
        )
        .await
        .expect("the runs");
    assert_eq!(rows.len(), THREADS * RUNS_PER_THREAD);
    let mut retried = 0;
    for r in &rows {
        let (id, status, attempt): (String, String, i32) = (r.get(0), r.get(1), r.get(2));
        assert_eq!(status, "success", "run {id} ended {status}");
        if interrupted.contains(&id) {
            assert!(
                attempt >= 2,
                "run {id} was interrupted by a kill but claimed once"
            );
        }
        if attempt > 1 {
            retried += 1;
        }
    }

    // What the same four runs make without a crash, in memory.
    let reference = drill_graph()
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .expect("the drill graph compiles");
    let thread = RunConfig::new().thread("reference");
    for k in 0..RUNS_PER_THREAD {
        reference
            .invoke(Drill::update().tag(tag(k)).delay_ms(0), &thread)
            .await
            .expect("a reference run");
    }
    let expected_checkpoints = reference
        .get_state_history(&thread, &ListOptions::default())
        .await
        .expect("the reference history")
        .len();
    let expected_done: Vec<Value> = (0..RUNS_PER_THREAD)
        .flat_map(|k| ["s1", "s2", "s3", "s4"].map(|s| json!(format!("{s}@{}", tag(k)))))
        .collect();

    for (i, t) in threads.iter().enumerate() {
        let base = &procs[i % PROCESSES].base;
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
            &http,
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

    for p in &mut procs {
        let _ = p.child.kill().await;
    }
    pg::drop_schema(&url, &schema).await;
    format!(
        "{kills} kills, {mid_run} mid-run, {} runs interrupted, {retried} runs claimed more than once",
        interrupted.len()
    )
}
