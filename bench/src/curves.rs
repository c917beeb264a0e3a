//! The scale curves: the same scenario at growing sizes, one JSON line per point.
//!
//! ```text
//! stategraph-bench curve_steps_mem STEPS        # one thread of STEPS supersteps, InMemorySaver
//! stategraph-bench curve_steps_sqlite STEPS     # the same on SqliteSaver (file in the temp dir)
//! stategraph-bench curve_fanout SENDS           # one superstep of SENDS `Send`s
//! stategraph-bench curve_threads_sqlite RUNNERS [THREADS]        # THREADS × 10 steps
//! stategraph-bench curve_threads_sqlite_sync RUNNERS [THREADS]   # … with Durability::Sync
//! stategraph-bench curve_threads_postgres RUNNERS [THREADS]      # on STATEGRAPH_POSTGRES_URL
//! stategraph-bench curve_threads_postgres_sync RUNNERS [THREADS]
//! ```
//!
//! The long-thread and many-thread points use `Durability::Async` (LangGraph's default)
//! unless the name ends in `_sync`. Every point checks its result (counter, checkpoints
//! stored, fan-out sum, a thread's final state read back) before printing it.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::json;
use stategraph::checkpoint::{CheckpointSaver, InMemorySaver};
use stategraph::prelude::*;
use stategraph_bench::{
    CounterState, CounterStateUpdate, FanState, chain, fanout, router_loop_with,
};
use stategraph_postgres::{PostgresOptions, PostgresSaver};
use stategraph_sqlite::SqliteSaver;

use super::{Error, Fields, check, fields, file_len, peak_rss_mib, remove_db, with_suffix};

/// The curve scenarios (each takes a size argument).
pub const CURVES: &[&str] = &[
    "curve_steps_mem",
    "curve_steps_sqlite",
    "curve_fanout",
    "curve_threads_sqlite",
    "curve_threads_sqlite_sync",
    "curve_threads_postgres",
    "curve_threads_postgres_sync",
];

/// Threads of the many-threads curve when no count is given.
const DEFAULT_THREADS: usize = 10_000;
/// Supersteps of each thread of the many-threads curve (a chain of this many nodes).
const STEPS_PER_THREAD: usize = 10;

/// Runs `args[1]` at size `args[2]` (and `args[3]` threads) and prints its JSON line.
pub fn main(args: &[String]) -> Result<(), Error> {
    let usage = || {
        format!(
            "usage: stategraph-bench {{{}}} SIZE [THREADS]",
            CURVES.join("|")
        )
    };
    let name = args.get(1).map(String::as_str).unwrap_or_default();
    let size: usize = args
        .get(2)
        .and_then(|s| s.replace('_', "").parse().ok())
        .ok_or_else(usage)?;
    let threads: usize = match args.get(3) {
        Some(s) => s.replace('_', "").parse().map_err(|_| usage())?,
        None => DEFAULT_THREADS,
    };
    if !CURVES.contains(&name) || size == 0 || threads == 0 || args.len() > 4 {
        return Err(usage().into());
    }
    let result = point(name, size, threads)?;
    let mut line = Fields::new();
    line.insert("scenario".into(), json!(name));
    line.insert("size".into(), json!(size));
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
    println!("{}", serde_json::Value::Object(line));
    Ok(())
}

/// Runs one point of curve `name` (one of [`CURVES`]) at `size`; `threads` is the
/// many-threads curve's thread count.
fn point(name: &str, size: usize, threads: usize) -> Result<Fields, Error> {
    if name.starts_with("curve_threads") {
        // Concurrent runners need worker threads: one per core, as tokio's default.
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?;
        return rt.block_on(run_threads(name, size, threads));
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        match name {
            "curve_steps_mem" => long_thread(size as u64, Store::Memory).await,
            "curve_steps_sqlite" => long_thread(size as u64, Store::Sqlite).await,
            "curve_fanout" => wide_fanout(size as u64).await,
            other => Err(format!("unknown curve `{other}`").into()),
        }
    })
}

// ---------------------------------------------------------------- long threads

enum Store {
    Memory,
    Sqlite,
}

/// When each `step` task started, so the step time is measured inside the run.
static STEP_STAMPS: Mutex<Vec<Instant>> = Mutex::new(Vec::new());

fn stamped_inc(state: &CounterState) -> CounterStateUpdate {
    STEP_STAMPS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(Instant::now());
    CounterState::update().counter(state.counter + 1)
}

/// One thread of `steps` supersteps with `Durability::Async`; the per-step time of the
/// first and last tenth of the run (from one node call to the next), the storage.
async fn long_thread(steps: u64, store: Store) -> Result<Fields, Error> {
    let n = usize::try_from(steps)?;
    let memory = Arc::new(InMemorySaver::new());
    let path = std::env::temp_dir().join(format!("sgcurve-{}.sqlite", std::process::id()));
    let saver: Arc<dyn CheckpointSaver> = match store {
        Store::Memory => memory.clone(),
        Store::Sqlite => {
            remove_db(&path);
            Arc::new(SqliteSaver::open(&path)?)
        }
    };
    let result = async {
        let graph = router_loop_with(
            steps,
            stamped_inc,
            CompileOptions::new().shared_checkpointer(saver.clone()),
        )?;
        let config = RunConfig::new()
            .thread("long")
            .recursion_limit(n + 10)
            .durability(Durability::Async);
        let rss0 = peak_rss_mib();
        {
            let mut stamps = STEP_STAMPS.lock().unwrap_or_else(|e| e.into_inner());
            stamps.clear();
            stamps.reserve_exact(n);
        }
        let t0 = Instant::now();
        let out = graph
            .invoke(CounterState::update().counter(0u64), &config)
            .await?;
        let elapsed = t0.elapsed().as_secs_f64();
        check(out.values.counter == steps, "counter after the loop")?;
        check(out.steps == n, "supersteps of the loop")?;
        let stamps = std::mem::take(&mut *STEP_STAMPS.lock().unwrap_or_else(|e| e.into_inner()));
        check(stamps.len() == n, "one node call per superstep")?;
        let saved = graph
            .get_state(&config)
            .await?
            .ok_or("the thread was not saved")?;
        check(saved.values.counter == steps, "saved counter read back")?;
        let threads = saver.list_threads().await?;
        let stored = threads
            .iter()
            .find(|t| t.thread_id == "long")
            .map_or(0, |t| t.checkpoint_count);
        // The input checkpoint and one per superstep.
        check(stored == steps + 1, "checkpoints stored")?;
        let mut r = flatness(&stamps);
        r.insert("supersteps".into(), json!(steps));
        r.insert("total_s".into(), json!(elapsed));
        r.insert(
            "us_per_superstep".into(),
            json!(elapsed / steps as f64 * 1e6),
        );
        r.insert("checkpoints_stored".into(), json!(stored));
        r.insert("peak_rss_mib_before_run".into(), json!(rss0));
        drop(graph);
        Ok::<_, Error>(r)
    }
    .await;
    drop(saver);
    let mut r = result?;
    r.insert("durability".into(), json!("async"));
    match store {
        Store::Memory => {
            r.insert("checkpointer".into(), json!("InMemorySaver"));
            r.insert(
                "stored_value_bytes".into(),
                json!(memory.stored_value_bytes()),
            );
        }
        Store::Sqlite => {
            // The saver is closed: the write-ahead log is folded into the file.
            let bytes = file_len(&path) + file_len(&with_suffix(&path, "-wal"));
            remove_db(&path);
            r.insert(
                "checkpointer".into(),
                json!("SqliteSaver::open(file in the temp dir)"),
            );
            r.insert("db_bytes".into(), json!(bytes));
            r.insert(
                "db_bytes_per_step".into(),
                json!(bytes as f64 / steps as f64),
            );
        }
    }
    // Includes the timestamps: 16 bytes per step.
    r.insert("peak_rss_mib".into(), json!(peak_rss_mib()));
    Ok(r)
}

/// The step times between consecutive node calls: the means of the first and last
/// tenth, their ratio, and the means of 20 equal blocks (for the charts).
fn flatness(stamps: &[Instant]) -> Fields {
    let gaps: Vec<f64> = stamps
        .windows(2)
        .map(|w| (w[1] - w[0]).as_secs_f64() * 1e6)
        .collect();
    let mean = |s: &[f64]| s.iter().sum::<f64>() / s.len().max(1) as f64;
    let tenth = (gaps.len() / 10).max(1);
    let first = mean(&gaps[..tenth.min(gaps.len())]);
    let last = mean(&gaps[gaps.len().saturating_sub(tenth)..]);
    let block = gaps.len().div_ceil(20).max(1);
    let blocks: Vec<f64> = gaps.chunks(block).map(|c| round2(mean(c))).collect();
    fields(json!({
        "first_10pct_us_per_step": round2(first),
        "last_10pct_us_per_step": round2(last),
        "flatness_last_over_first": round2(last / first),
        "us_per_step_by_20_blocks": blocks,
    }))
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

// ---------------------------------------------------------------- wide fan-out

/// One superstep of `sends` `Send`s (`fanout1k`'s graph): a warm-up at 1,000, then
/// enough timed runs for about 100,000 Sends (at least one, at most 10).
async fn wide_fanout(sends: u64) -> Result<Fields, Error> {
    let graph = fanout()?;
    let config = RunConfig::new();
    let out = graph.invoke(FanState::update().n(1000u64), &config).await?;
    check(out.values.total == 999_000, "warm-up fan-out sum")?;
    let rss0 = peak_rss_mib();
    let expected: u64 = (0..sends).map(|i| 2 * i).sum();
    let runs = (100_000 / sends).clamp(1, 10);
    let t0 = Instant::now();
    for _ in 0..runs {
        let out = graph.invoke(FanState::update().n(sends), &config).await?;
        check(out.values.total == expected, "fan-out sum")?;
        check(
            out.values.results.len() == usize::try_from(sends)?,
            "fan-out results",
        )?;
    }
    let elapsed = t0.elapsed().as_secs_f64();
    Ok(fields(json!({
        "invokes": runs,
        "sends_per_invoke": sends,
        "total_s": elapsed,
        "ms_per_invoke": elapsed / runs as f64 * 1e3,
        "us_per_send": elapsed / runs as f64 / sends as f64 * 1e6,
        "peak_rss_mib_before_run": rss0,
        "peak_rss_mib": peak_rss_mib(),
    })))
}

// ---------------------------------------------------------------- many threads

/// `threads` threads of a 10-node chain, `runners` tokio tasks sharing one compiled
/// graph and one saver, each invoking the graph on its share of the threads.
async fn run_threads(name: &str, runners: usize, threads: usize) -> Result<Fields, Error> {
    let durability = if name.ends_with("_sync") {
        Durability::Sync
    } else {
        Durability::Async
    };
    let (saver, described, cleanup): (Arc<dyn CheckpointSaver>, String, Option<PathBuf>) =
        if name.starts_with("curve_threads_postgres") {
            let (saver, described) = postgres_saver().await?;
            (saver, described, None)
        } else {
            let path =
                std::env::temp_dir().join(format!("sgcurve-threads-{}.sqlite", std::process::id()));
            remove_db(&path);
            let saver = Arc::new(SqliteSaver::open(&path)?);
            (
                saver,
                "SqliteSaver::open(file in the temp dir)".into(),
                Some(path),
            )
        };
    clear_threads(saver.as_ref()).await?;
    let result = many_threads(saver.clone(), runners, threads, durability).await;
    let cleared = clear_threads(saver.as_ref()).await;
    drop(saver);
    if let Some(path) = &cleanup {
        remove_db(path);
    }
    let mut r = result?;
    cleared?;
    r.insert("checkpointer".into(), json!(described));
    r.insert(
        "durability".into(),
        json!(if durability == Durability::Sync {
            "sync"
        } else {
            "async"
        }),
    );
    Ok(r)
}

/// The saver on `STATEGRAPH_POSTGRES_URL` (over TLS with `sslmode=verify-full` when
/// `STATEGRAPH_POSTGRES_TLS_CA` names the CA), in the schema `sg_curves`, with a pool
/// of 17 connections so that 16 runners never wait for one.
async fn postgres_saver() -> Result<(Arc<dyn CheckpointSaver>, String), Error> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let url = var("STATEGRAPH_POSTGRES_URL").ok_or(
        "STATEGRAPH_POSTGRES_URL is not set: set it to the PostgreSQL database to measure \
         (postgres://user:password@host:port/db)",
    )?;
    let (url, tls) = match var("STATEGRAPH_POSTGRES_TLS_CA") {
        Some(ca) => {
            let sep = if url.contains('?') { '&' } else { '?' };
            (
                format!("{url}{sep}sslmode=verify-full&sslrootcert={ca}"),
                "TLS (sslmode=verify-full)",
            )
        }
        None => (url, "the URL's sslmode"),
    };
    let options = PostgresOptions::new().schema("sg_curves").pool_size(17);
    let saver = PostgresSaver::connect_with(&url, options).await?;
    Ok((
        Arc::new(saver),
        format!("PostgresSaver (schema sg_curves, pool of 17, {tls})"),
    ))
}

/// Deletes every thread the saver holds (the curve's schema or file is its own).
async fn clear_threads(saver: &dyn CheckpointSaver) -> Result<(), Error> {
    for t in saver.list_threads().await? {
        saver.delete_thread(&t.thread_id).await?;
    }
    Ok(())
}

async fn many_threads(
    saver: Arc<dyn CheckpointSaver>,
    runners: usize,
    threads: usize,
    durability: Durability,
) -> Result<Fields, Error> {
    let graph = Arc::new(chain(
        STEPS_PER_THREAD,
        CompileOptions::new().shared_checkpointer(saver.clone()),
    )?);
    let steps = STEPS_PER_THREAD as u64;
    // Warm-up (untimed, its own thread): prepares statements, fills the pool.
    let warm = graph
        .invoke(
            CounterState::update().counter(0u64),
            &RunConfig::new().thread("warm").durability(durability),
        )
        .await?;
    check(warm.values.counter == steps, "warm-up counter")?;
    let t0 = Instant::now();
    let tasks: Vec<_> = (0..runners)
        .map(|r| {
            let graph = graph.clone();
            tokio::spawn(async move {
                for k in (r..threads).step_by(runners) {
                    let config = RunConfig::new()
                        .thread(format!("t-{k}"))
                        .durability(durability);
                    let out = graph
                        .invoke(CounterState::update().counter(0u64), &config)
                        .await
                        .map_err(|e| e.to_string())?;
                    if out.values.counter != steps {
                        return Err(format!("wrong result: counter of thread t-{k}"));
                    }
                }
                Ok::<_, String>(())
            })
        })
        .collect();
    for task in tasks {
        task.await??;
    }
    let elapsed = t0.elapsed().as_secs_f64();
    let supersteps = threads as u64 * steps;
    // Read back: every thread with its input checkpoint and one per superstep (the
    // async saves have all landed: `invoke` returns after its thread's last save).
    let listed = saver.list_threads().await?;
    let ours = listed.iter().filter(|t| t.thread_id.starts_with("t-"));
    check(ours.clone().count() == threads, "threads stored")?;
    check(
        ours.clone().all(|t| t.checkpoint_count == steps + 1),
        "checkpoints stored per thread",
    )?;
    let last = format!("t-{}", threads - 1);
    let saved = graph
        .get_state(&RunConfig::new().thread(last.as_str()))
        .await?
        .ok_or("the last thread was not saved")?;
    check(
        saved.values.counter == steps,
        "last thread's counter read back",
    )?;
    Ok(fields(json!({
        "runners": runners,
        "threads": threads,
        "supersteps_per_thread": steps,
        "supersteps": supersteps,
        "total_s": elapsed,
        "supersteps_per_s": supersteps as f64 / elapsed,
        "checkpoints_stored": threads as u64 * (steps + 1),
        "peak_rss_mib": peak_rss_mib(),
    })))
}

#[cfg(test)]
mod tests {
    /// Every curve runs at a small size and passes its own result checks (a debug
    /// build: the timings mean nothing). PostgreSQL only with `STATEGRAPH_POSTGRES_URL`.
    #[test]
    fn every_curve_checks_its_result_at_a_small_size() {
        let pg = std::env::var("STATEGRAPH_POSTGRES_URL").is_ok_and(|u| !u.trim().is_empty());
        for &name in super::CURVES {
            if name.contains("postgres") && !pg {
                eprintln!("notice: {name} skipped: STATEGRAPH_POSTGRES_URL is not set");
                continue;
            }
            let size = if name.starts_with("curve_threads") {
                3
            } else {
                300
            };
            let fields = super::point(name, size, 20).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(fields.contains_key("total_s"), "{name}: {fields:?}");
        }
    }

    #[test]
    fn the_flatness_ratio_is_the_last_tenth_over_the_first() {
        let t0 = std::time::Instant::now();
        // 100 gaps: the first 10 of 1 ms, the last 10 of 3 ms.
        let mut stamps = vec![t0];
        for i in 0..100u64 {
            let gap = if i >= 90 { 3 } else { 1 };
            let last = *stamps.last().unwrap_or(&t0);
            stamps.push(last + std::time::Duration::from_millis(gap));
        }
        let f = super::flatness(&stamps);
        assert_eq!(f["first_10pct_us_per_step"], 1000.0);
        assert_eq!(f["last_10pct_us_per_step"], 3000.0);
        assert_eq!(f["flatness_last_over_first"], 3.0);
        assert_eq!(
            f["us_per_step_by_20_blocks"].as_array().map(Vec::len),
            Some(20)
        );
    }
}
