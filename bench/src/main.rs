//! Framework-overhead scenarios, the same graphs and work as the LangGraph reference
//! script (`bench.py`), printing one JSON line per scenario with the same field names.
//!
//! ```text
//! cargo run --release -p stategraph-bench -- SCENARIO   # or `all`
//! ```
//!
//! Every node is a trivial pure function, so the figures are the framework's own cost.
//! The checkpointed scenarios use `Durability::Async`, as the reference does
//! (LangGraph's default durability is `async`); the `_sync` extras run them with
//! stategraph's default, `Durability::Sync`.
//! Each scenario checks its result (counter, sum, number of checkpoints) so a broken
//! run cannot look fast. Run one scenario per process: `peak_rss_mib` is the process's
//! peak resident set (`VmHWM`).

mod curves;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures::StreamExt;
use serde_json::{Map, Value, json};
use stategraph::checkpoint::InMemorySaver;
use stategraph::prelude::*;
use stategraph_bench::{CounterState, FanState, chain, fanout, router_loop, subgraph_chain};
use stategraph_sqlite::{SqliteOptions, SqliteSaver, Synchronous};

mod pg;

type Error = Box<dyn std::error::Error>;
type Fields = Map<String, Value>;

// ---------------------------------------------------------------- graphs

/// `n_invokes` timed invokes after two untimed warm-ups; with `thread_prefix`, each
/// invoke runs on a thread of its own.
async fn timed_invokes(
    graph: &CompiledGraph<CounterState>,
    n_invokes: usize,
    steps_per_invoke: u64,
    thread: Option<(&str, Durability)>,
) -> Result<Fields, Error> {
    let config = |name: String| match thread {
        Some((_, d)) => RunConfig::new().thread(name).durability(d),
        None => RunConfig::new(),
    };
    for w in 0..2 {
        let out = graph
            .invoke(
                CounterState::update().counter(0u64),
                &config(format!("warm-{w}")),
            )
            .await?;
        check(out.values.counter == steps_per_invoke, "warm-up counter")?;
    }
    let prefix = thread.map_or("", |(p, _)| p);
    let t0 = Instant::now();
    let mut last = 0;
    for k in 0..n_invokes {
        let out = graph
            .invoke(
                CounterState::update().counter(0u64),
                &config(format!("{prefix}-{k}")),
            )
            .await?;
        last = out.values.counter;
        check(last == steps_per_invoke, "counter after the chain")?;
    }
    let elapsed = t0.elapsed().as_secs_f64();
    check(last == steps_per_invoke, "counter after the chain")?;
    let us_inv = elapsed / n_invokes as f64 * 1e6;
    Ok(fields(json!({
        "invokes": n_invokes,
        "supersteps_per_invoke": steps_per_invoke,
        "total_s": elapsed,
        "us_per_invoke": us_inv,
        "us_per_superstep": us_inv / steps_per_invoke as f64,
        "peak_rss_mib": peak_rss_mib(),
    })))
}

async fn sc_chain100() -> Result<Fields, Error> {
    let graph = chain(100, CompileOptions::new())?;
    timed_invokes(&graph, 200, 100, None).await
}

async fn sc_chain100_ckpt_mem(durability: Durability) -> Result<Fields, Error> {
    let saver = Arc::new(InMemorySaver::new());
    let graph = chain(
        100,
        CompileOptions::new().shared_checkpointer(saver.clone()),
    )?;
    let mut r = timed_invokes(&graph, 50, 100, Some(("mem", durability))).await?;
    // 52 threads (2 warm-ups), each: the input checkpoint and one per superstep (one
    // checkpoint per thread with `exit` durability).
    let stored = saver.checkpoint_count();
    let per_thread = match durability {
        Durability::Exit => 1,
        _ => 101,
    };
    check(stored == 52 * per_thread, "checkpoints stored")?;
    r.insert("checkpoints_stored".into(), json!(stored));
    r.insert("checkpointer".into(), json!("InMemorySaver"));
    r.insert("durability".into(), json!(durability_name(durability)));
    Ok(r)
}

async fn sc_chain100_ckpt_sqlite(
    synchronous: Synchronous,
    durability: Durability,
) -> Result<Fields, Error> {
    let path = std::env::temp_dir().join(format!("sgbench-{}.sqlite", std::process::id()));
    remove_db(&path);
    let result = async {
        let saver = SqliteSaver::open_with(&path, SqliteOptions::new().synchronous(synchronous))?;
        let graph = chain(100, CompileOptions::new().checkpointer(saver.clone()))?;
        let r = timed_invokes(&graph, 20, 100, Some(("sql", durability))).await?;
        let last = graph
            .get_state(&RunConfig::new().thread("sql-19"))
            .await?
            .ok_or("thread sql-19 was not saved")?;
        check(last.values.counter == 100, "saved counter")?;
        // Close the database: the last connection folds the write-ahead log in.
        drop((graph, saver));
        Ok::<_, Error>(r)
    }
    .await;
    let db = file_len(&path);
    let wal = file_len(&with_suffix(&path, "-wal"));
    remove_db(&path);
    let mut r = result?;
    r.insert("db_bytes".into(), json!(db + wal));
    r.insert("db_wal_bytes".into(), json!(wal));
    let opened = match synchronous {
        Synchronous::Full => "SqliteSaver::open(file in the temp dir)",
        _ => "SqliteSaver::open_with(file in the temp dir, synchronous = NORMAL)",
    };
    r.insert("checkpointer".into(), json!(opened));
    r.insert("durability".into(), json!(durability_name(durability)));
    Ok(r)
}

/// A parent chain of 10 subgraph nodes, each a child chain of 10 nodes: 100 child
/// supersteps per invoke (`us_per_superstep` divides by those), 10 of the parent's.
async fn sc_subgraph_chain(durability: Option<Durability>) -> Result<Fields, Error> {
    let (outer, inner) = (10, 10);
    let saver = Arc::new(InMemorySaver::new());
    let options = match durability {
        Some(_) => CompileOptions::new().shared_checkpointer(saver.clone()),
        None => CompileOptions::new(),
    };
    let graph = subgraph_chain(outer, inner, options)?;
    let steps = (outer * inner) as u64;
    let (invokes, thread) = match durability {
        Some(d) => (50, Some(("sub", d))),
        None => (200, None),
    };
    let mut r = timed_invokes(&graph, invokes, steps, thread).await?;
    r.insert("parent_supersteps_per_invoke".into(), json!(outer));
    if let Some(d) = durability {
        // Per thread (2 warm-ups + the timed invokes): the parent's input checkpoint
        // and one per parent step, and the same in each of the 10 children's
        // namespaces.
        let stored = saver.checkpoint_count();
        let per_thread = (outer + 1) + outer * (inner + 1);
        check(
            stored == (invokes + 2) * per_thread,
            "checkpoints stored (parent and children)",
        )?;
        r.insert("checkpoints_stored".into(), json!(stored));
        r.insert("checkpointer".into(), json!("InMemorySaver"));
        r.insert("durability".into(), json!(durability_name(d)));
    }
    Ok(r)
}

async fn sc_loop10k() -> Result<Fields, Error> {
    let graph = router_loop(10_000)?;
    let config = RunConfig::new().recursion_limit(10_010);
    let t0 = Instant::now();
    let out = graph
        .invoke(CounterState::update().counter(0u64), &config)
        .await?;
    let elapsed = t0.elapsed().as_secs_f64();
    check(out.values.counter == 10_000, "counter after the loop")?;
    check(out.steps == 10_000, "supersteps of the loop")?;
    Ok(fields(json!({
        "supersteps": 10_000,
        "total_s": elapsed,
        "us_per_superstep": elapsed / 10_000.0 * 1e6,
        "peak_rss_mib": peak_rss_mib(),
    })))
}

async fn sc_fanout1k() -> Result<Fields, Error> {
    let n: u64 = 1000;
    let graph = fanout()?;
    let expected: u64 = (0..n).map(|i| 2 * i).sum();
    let config = RunConfig::new();
    let out = graph.invoke(FanState::update().n(n), &config).await?; // warm-up
    check(
        out.values.total == expected && out.values.results.len() == 1000,
        "fan-out sum",
    )?;
    let runs = 10;
    let t0 = Instant::now();
    let mut total = 0;
    for _ in 0..runs {
        let out = graph.invoke(FanState::update().n(n), &config).await?;
        total = out.values.total;
        check(out.values.results.len() == 1000, "fan-out results")?;
    }
    let elapsed = t0.elapsed().as_secs_f64();
    check(total == expected, "fan-out sum")?;
    Ok(fields(json!({
        "invokes": runs,
        "sends_per_invoke": n,
        "total_s": elapsed,
        "ms_per_invoke": elapsed / f64::from(runs) * 1e3,
        "us_per_send": elapsed / f64::from(runs) / n as f64 * 1e6,
        "peak_rss_mib": peak_rss_mib(),
    })))
}

/// The growing-state scenario: a counter and a list gaining 1 KiB per superstep.
#[derive(GraphState, Clone, Debug, Default)]
struct BigState {
    counter: u64,
    #[reducer(append)]
    items: Vec<String>,
}

/// When each `append` task started: the per-step cost is the time between two.
static STAMPS: Mutex<Vec<Instant>> = Mutex::new(Vec::new());

fn stamp() {
    STAMPS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(Instant::now());
}

fn append_kib(state: &BigState) -> BigStateUpdate {
    stamp();
    BigState::update()
        .counter(state.counter + 1)
        .items(["x".repeat(1024)])
}

async fn state_big(durability: Durability) -> Result<Fields, Error> {
    let steps = 1000;
    let saver = Arc::new(InMemorySaver::new());
    let mut g = StateGraph::<BigState>::new();
    let append = g.add_node_fn("append", append_kib);
    g.add_edge(START, &append);
    let target = append.clone();
    g.add_conditional_edges(
        &append,
        move |s: &BigState| {
            if s.counter >= 1000 {
                Route::end()
            } else {
                Route::to(&target)
            }
        },
        (&append, END),
    );
    let graph = g.compile_with(CompileOptions::new().shared_checkpointer(saver.clone()))?;
    let config = RunConfig::new()
        .thread("big")
        .recursion_limit(1010)
        .durability(durability);
    let rss0 = peak_rss_mib();
    STAMPS.lock().unwrap_or_else(|e| e.into_inner()).clear();
    // As the reference does: stream the run's updates and time each one's arrival.
    let mut ts = vec![Instant::now()];
    let mut events = graph.stream(
        BigState::update().counter(0u64),
        &config,
        StreamMode::UPDATES,
    );
    while let Some(event) = events.next().await {
        if let StreamEvent::Updates { .. } = event? {
            ts.push(Instant::now());
        }
    }
    let t_end = Instant::now();
    drop(events);
    let elapsed = (t_end - ts[0]).as_secs_f64();
    let final_state = graph
        .get_state(&config)
        .await?
        .ok_or("the thread was not saved")?;
    check(
        final_state.values.counter == 1000 && final_state.values.items.len() == 1000,
        "final state",
    )?;
    check(ts.len() == steps + 1, "one update per superstep")?;
    let d = gaps_us(&ts);
    // The same, timed inside the node: from one task's start to the next (to the last
    // update event for the last task: the run's end also waits for the remaining
    // background saves, which is no step's cost), independent of how the stream
    // delivers its events.
    let mut in_node = std::mem::take(&mut *STAMPS.lock().unwrap_or_else(|e| e.into_inner()));
    check(in_node.len() == steps, "one task per superstep")?;
    in_node.push(ts[steps]);
    let checkpoints = saver.checkpoint_count();
    check(
        checkpoints == steps + 1 || durability == Durability::Exit,
        "checkpoints stored",
    )?;
    Ok(fields(json!({
        "supersteps": steps,
        "checkpointer": "InMemorySaver",
        "durability": durability_name(durability),
        "total_s": elapsed,
        "us_per_superstep": elapsed / steps as f64 * 1e6,
        // mean us/superstep for steps 1-100, 101-200, ... 901-1000 (wall time between
        // consecutive update events)
        "us_per_superstep_by_100_block": blocks_of_100(&d),
        "us_per_superstep_by_100_block_in_node": blocks_of_100(&gaps_us(&in_node)),
        // The same, median per block: background saves run in bursts (one batch when
        // the stream's buffer of 64 events fills) and a whole-value snapshot lands
        // when an append channel doubles, so a block's mean depends on how many of
        // those it holds; the median shows the typical step.
        "us_per_superstep_by_100_block_in_node_median": medians_of_100(&gaps_us(&in_node)),
        "last_step_us": round1(d[steps - 1]),
        "checkpoints_stored": checkpoints,
        "stored_value_bytes": saver.stored_value_bytes(),
        "peak_rss_mib": peak_rss_mib(),
        "peak_rss_mib_before_run": rss0,
    })))
}

/// Microseconds between consecutive instants.
fn gaps_us(ts: &[Instant]) -> Vec<f64> {
    ts.windows(2)
        .map(|w| (w[1] - w[0]).as_secs_f64() * 1e6)
        .collect()
}

fn blocks_of_100(d: &[f64]) -> Vec<f64> {
    d.chunks(100)
        .map(|c| round1(c.iter().sum::<f64>() / c.len() as f64))
        .collect()
}

fn medians_of_100(d: &[f64]) -> Vec<f64> {
    d.chunks(100)
        .map(|c| {
            let mut c = c.to_vec();
            c.sort_by(f64::total_cmp);
            round1(c[c.len() / 2])
        })
        .collect()
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

// ---------------------------------------------------------------- helpers

fn durability_name(d: Durability) -> &'static str {
    match d {
        Durability::Sync => "sync",
        Durability::Async => "async",
        Durability::Exit => "exit",
    }
}

fn check(ok: bool, what: &str) -> Result<(), Error> {
    if ok {
        Ok(())
    } else {
        Err(format!("wrong result: {what}").into())
    }
}

fn fields(v: Value) -> Fields {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// The process's peak resident set in MiB (`VmHWM`), 0 where /proc is absent.
fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kib| kib / 1024.0)
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

fn remove_db(path: &Path) {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let _ = std::fs::remove_file(with_suffix(path, suffix));
    }
}

const SCENARIOS: &[&str] = &[
    "chain100",
    "loop10k",
    "fanout1k",
    "chain100_ckpt_mem",
    "chain100_ckpt_sqlite",
    "state_big",
    "subgraph_chain",
    "subgraph_chain_ckpt_mem",
    // extras: stategraph's default durability (sync), the SQLite saver without a
    // flush per commit, and state_big with the other durability modes
    "chain100_ckpt_mem_sync",
    "chain100_ckpt_sqlite_sync",
    "chain100_ckpt_sqlite_normal",
    "state_big_sync",
    "state_big_exit",
];

async fn run(name: &str) -> Result<Fields, Error> {
    match name {
        "chain100" => sc_chain100().await,
        "loop10k" => sc_loop10k().await,
        "fanout1k" => sc_fanout1k().await,
        "chain100_ckpt_mem" => sc_chain100_ckpt_mem(Durability::Async).await,
        "chain100_ckpt_mem_sync" => sc_chain100_ckpt_mem(Durability::Sync).await,
        "chain100_ckpt_sqlite" => {
            sc_chain100_ckpt_sqlite(Synchronous::Full, Durability::Async).await
        }
        "chain100_ckpt_sqlite_sync" => {
            sc_chain100_ckpt_sqlite(Synchronous::Full, Durability::Sync).await
        }
        "chain100_ckpt_sqlite_normal" => {
            sc_chain100_ckpt_sqlite(Synchronous::Normal, Durability::Sync).await
        }
        "state_big" => state_big(Durability::Async).await,
        "subgraph_chain" => sc_subgraph_chain(None).await,
        "subgraph_chain_ckpt_mem" => sc_subgraph_chain(Some(Durability::Async)).await,
        "state_big_sync" => state_big(Durability::Sync).await,
        "state_big_exit" => state_big(Durability::Exit).await,
        "chain100_ckpt_postgres" => pg::chain100_ckpt_postgres(Durability::Async).await,
        "chain100_ckpt_postgres_sync" => pg::chain100_ckpt_postgres(Durability::Sync).await,
        other => Err(format!("unknown scenario `{other}`").into()),
    }
}

fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).is_some_and(|a| a.starts_with("curve_")) {
        return curves::main(&args); // the scale curves: `SCENARIO SIZE` (curves.rs)
    }
    let valid = args.len() == 2
        && (args[1] == "all"
            || [SCENARIOS, pg::SCENARIOS]
                .concat()
                .contains(&args[1].as_str()));
    if !valid {
        eprintln!(
            "usage: {} {{{}|all}}",
            args.first().map_or("stategraph-bench", String::as_str),
            [SCENARIOS, pg::SCENARIOS].concat().join("|")
        );
        std::process::exit(2);
    }
    if cfg!(debug_assertions) {
        eprintln!("warning: a debug build; measure with `cargo run --release`");
    }
    let names: Vec<&str> = if args[1] == "all" {
        SCENARIOS.to_vec()
    } else {
        vec![args[1].as_str()]
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    for name in names {
        let result = rt.block_on(run(name))?;
        let mut line = Map::new();
        line.insert("scenario".into(), json!(name));
        line.extend(result);
        line.insert(
            "versions".into(),
            json!({
                "stategraph": env!("CARGO_PKG_VERSION"),
                "profile": if cfg!(debug_assertions) { "debug" } else { "release" },
            }),
        );
        line.insert(
            "cpus".into(),
            json!(std::thread::available_parallelism().map_or(1, |n| n.get())),
        );
        println!("{}", Value::Object(line));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// Every scenario runs and passes its own result checks (in a debug build the
    /// timings mean nothing; this keeps the program from rotting).
    #[test]
    fn every_scenario_checks_its_result() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        for name in super::SCENARIOS {
            let fields = rt
                .block_on(super::run(name))
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(fields.contains_key("total_s"), "{name}: {fields:?}");
        }
    }
}
