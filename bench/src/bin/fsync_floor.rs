//! The durable-commit floor of this machine's disk, next to which the `_sync` SQLite
//! scenarios are read: a bare loop of one `INSERT` and one `COMMIT` in SQLite's WAL mode
//! (the same bundled SQLite and file system as `SqliteSaver`), with
//! `synchronous = FULL` (one `fsync` of the log per commit) and `NORMAL`; the same
//! loop committing the rows a `chain100` superstep stores (a checkpoint, a pending
//! write and a channel value, in three tables keyed as the saver's are); and a bare
//! 4 KiB `write` + `fdatasync` loop on a plain file. No framework code runs.
//!
//! ```text
//! cargo run --release -p stategraph-bench --bin fsync_floor [COMMITS]
//! ```
//!
//! Prints one JSON line per loop: median and mean microseconds per commit.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::time::Instant;

use rusqlite::Connection;
use serde_json::json;

type Error = Box<dyn std::error::Error>;

/// The bytes one commit inserts: about what a `chain100` superstep stores (its
/// checkpoint, pending write and channel value rows).
const ROW_BYTES: usize = 1024;

fn main() -> Result<(), Error> {
    let commits: usize = match std::env::args().nth(1) {
        Some(n) => n
            .parse()
            .map_err(|e| format!("COMMITS must be a number: {e}"))?,
        None => 2000,
    };
    let dir = tempfile::tempdir_in(std::env::temp_dir())?;
    for synchronous in ["FULL", "NORMAL"] {
        let times = sqlite_loop(
            &dir.path().join(format!("floor-{synchronous}.sqlite")),
            synchronous,
            commits,
        )?;
        report(
            &format!("sqlite_wal_{}", synchronous.to_lowercase()),
            &times,
        );
    }
    let times = step_rows_loop(&dir.path().join("floor-step.sqlite"), commits)?;
    report("sqlite_wal_full_step_rows", &times);
    let times = fdatasync_loop(&dir.path().join("floor.bin"), commits)?;
    report("write_4k_fdatasync", &times);
    Ok(())
}

fn sqlite_loop(path: &Path, synchronous: &str, commits: usize) -> Result<Vec<f64>, Error> {
    let conn = Connection::open(path)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", synchronous)?;
    conn.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, v BLOB NOT NULL)")?;
    let row = vec![7u8; ROW_BYTES];
    let mut times = Vec::with_capacity(commits);
    // A few untimed commits first: the log file is created and grown.
    for i in 0..commits + 20 {
        let t0 = Instant::now();
        conn.execute_batch("BEGIN")?;
        conn.prepare_cached("INSERT INTO t (v) VALUES (?1)")?
            .execute([&row])?;
        conn.execute_batch("COMMIT")?;
        if i >= 20 {
            times.push(t0.elapsed().as_secs_f64() * 1e6);
        }
    }
    let stored: i64 = conn.query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))?;
    if usize::try_from(stored).ok() != Some(commits + 20) {
        return Err(format!("{stored} rows stored, expected {}", commits + 20).into());
    }
    Ok(times)
}

/// One commit per step of what `SqliteSaver` stores for a `chain100` superstep, in
/// tables keyed like its own: a checkpoint row (about 900 bytes of JSON), a pending
/// write and a channel value.
fn step_rows_loop(path: &Path, commits: usize) -> Result<Vec<f64>, Error> {
    let conn = Connection::open(path)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.execute_batch(
        "CREATE TABLE c (thread TEXT NOT NULL, ns TEXT NOT NULL, id TEXT NOT NULL,
             parent TEXT, body TEXT NOT NULL, seq INTEGER NOT NULL,
             PRIMARY KEY (thread, ns, id));
         CREATE INDEX c_seq ON c (thread, ns, seq);
         CREATE TABLE w (thread TEXT NOT NULL, ns TEXT NOT NULL, id TEXT NOT NULL,
             task TEXT NOT NULL, idx INTEGER NOT NULL, value TEXT NOT NULL,
             PRIMARY KEY (thread, ns, id, task, idx));
         CREATE TABLE v (thread TEXT NOT NULL, ns TEXT NOT NULL, channel TEXT NOT NULL,
             version INTEGER NOT NULL, value TEXT NOT NULL,
             PRIMARY KEY (thread, ns, channel, version));",
    )?;
    let body = "x".repeat(900);
    let mut times = Vec::with_capacity(commits);
    for i in 0..commits + 20 {
        let (id, parent) = (format!("{i:024}"), format!("{:024}", i.saturating_sub(1)));
        let seq = i64::try_from(i)?;
        let t0 = Instant::now();
        conn.execute_batch("BEGIN")?;
        conn.prepare_cached("INSERT INTO w VALUES ('t', '', ?1, 'n0', 0, '{\"counter\":1}')")?
            .execute([&id])?;
        conn.prepare_cached("INSERT INTO v VALUES ('t', '', 'counter', ?1, '1')")?
            .execute([seq])?;
        conn.prepare_cached("INSERT INTO c VALUES ('t', '', ?1, ?2, ?3, ?4)")?
            .execute(rusqlite::params![id, parent, body, seq])?;
        conn.execute_batch("COMMIT")?;
        if i >= 20 {
            times.push(t0.elapsed().as_secs_f64() * 1e6);
        }
    }
    let stored: i64 = conn.query_row("SELECT COUNT(*) FROM c", [], |r| r.get(0))?;
    if usize::try_from(stored).ok() != Some(commits + 20) {
        return Err(format!("{stored} steps stored, expected {}", commits + 20).into());
    }
    Ok(times)
}

fn fdatasync_loop(path: &Path, commits: usize) -> Result<Vec<f64>, Error> {
    let mut file = OpenOptions::new().create(true).append(true).open(path)?;
    let block = vec![7u8; 4096];
    let mut times = Vec::with_capacity(commits);
    for i in 0..commits + 20 {
        let t0 = Instant::now();
        file.write_all(&block)?;
        file.sync_data()?;
        if i >= 20 {
            times.push(t0.elapsed().as_secs_f64() * 1e6);
        }
    }
    let len = file.metadata()?.len();
    if len != 4096 * (commits as u64 + 20) {
        return Err(format!("file is {len} bytes, expected {}", 4096 * (commits + 20)).into());
    }
    Ok(times)
}

fn report(name: &str, times: &[f64]) {
    let mut sorted = times.to_vec();
    sorted.sort_by(f64::total_cmp);
    let median = sorted.get(sorted.len() / 2).copied().unwrap_or(f64::NAN);
    let p90 = sorted
        .get(sorted.len() * 9 / 10)
        .copied()
        .unwrap_or(f64::NAN);
    let mean = times.iter().sum::<f64>() / times.len().max(1) as f64;
    println!(
        "{}",
        json!({
            "floor": name,
            "commits": times.len(),
            "us_per_commit_median": median,
            "us_per_commit_p90": p90,
            "us_per_commit_mean": mean,
        })
    );
}
