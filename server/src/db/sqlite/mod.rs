//! The server's tables in a SQLite file (the embedded default: one process).

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod assistants;
mod crons;
mod outbox;
mod queue;
mod retention;
mod threads;

use rusqlite::{Connection, OptionalExtension, Row, params};
use serde_json::{Map, Value};
use stategraph::BoxFuture;

use super::{
    Db, DbError, DbResult, RunRow, RunStatus, ThreadOrder, ThreadQuery, ThreadRow, ThreadStatus,
    contains, parse_json, parse_object,
};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS sg_threads (
    thread_id TEXT PRIMARY KEY,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    metadata TEXT NOT NULL,
    status TEXT NOT NULL,
    state_values TEXT NOT NULL,
    interrupts TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS sg_runs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL UNIQUE,
    thread_id TEXT NOT NULL,
    assistant_id TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    status TEXT NOT NULL,
    metadata TEXT NOT NULL,
    multitask_strategy TEXT NOT NULL,
    kwargs TEXT NOT NULL,
    attempt INTEGER NOT NULL DEFAULT 0,
    cancel TEXT,
    output TEXT,
    worker TEXT,
    lease_until INTEGER,
    ended_at INTEGER
);
CREATE INDEX IF NOT EXISTS sg_runs_thread ON sg_runs (thread_id, seq);
CREATE INDEX IF NOT EXISTS sg_runs_thread_status ON sg_runs (thread_id, status, seq);
CREATE INDEX IF NOT EXISTS sg_runs_status ON sg_runs (status, seq);
CREATE TABLE IF NOT EXISTS sg_run_events (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    event TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS sg_crons (
    cron_id TEXT PRIMARY KEY,
    assistant_id TEXT NOT NULL,
    thread_id TEXT,
    schedule TEXT NOT NULL,
    timezone TEXT,
    end_time INTEGER,
    enabled INTEGER NOT NULL,
    on_run_completed TEXT,
    payload TEXT NOT NULL,
    metadata TEXT NOT NULL,
    next_run_at INTEGER,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS sg_crons_due ON sg_crons (next_run_at) WHERE enabled = 1;
CREATE TABLE IF NOT EXISTS sg_webhooks (
    delivery_id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL,
    url TEXT NOT NULL,
    body TEXT NOT NULL,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    ended_at INTEGER,
    last_error TEXT
);
CREATE INDEX IF NOT EXISTS sg_webhooks_due ON sg_webhooks (next_attempt_at) WHERE state = 'pending';
CREATE TABLE IF NOT EXISTS sg_assistants (
    assistant_id TEXT PRIMARY KEY,
    graph_id TEXT NOT NULL,
    name TEXT NOT NULL,
    description TEXT,
    config TEXT NOT NULL,
    context TEXT NOT NULL,
    metadata TEXT NOT NULL,
    version INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS sg_assistant_versions (
    assistant_id TEXT NOT NULL,
    graph_id TEXT NOT NULL,
    name TEXT NOT NULL,
    description TEXT,
    config TEXT NOT NULL,
    context TEXT NOT NULL,
    metadata TEXT NOT NULL,
    version INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (assistant_id, version)
);
";

/// Columns added to tables of earlier versions, as `(table, column, type)`.
const ADDED_COLUMNS: &[(&str, &str, &str)] = &[
    ("sg_runs", "run_after", "INTEGER"),
    ("sg_threads", "ttl_ms", "INTEGER"),
    ("sg_threads", "ttl_strategy", "TEXT"),
    ("sg_threads", "swept_at", "INTEGER"),
    ("sg_threads", "sweep_hold", "INTEGER"),
];

pub(super) const RUN_COLUMNS: &str = "run_id, thread_id, assistant_id, created_at, updated_at, status, \
     metadata, multitask_strategy, kwargs, attempt, cancel, output";
const THREAD_COLUMNS: &str =
    "thread_id, created_at, updated_at, metadata, status, state_values, interrupts";

/// The tables in one SQLite file, on one connection.
pub(crate) struct SqliteDb {
    conn: Arc<Mutex<Connection>>,
}

impl SqliteDb {
    /// Opens (creating) the tables in the file at `path`.
    pub(crate) fn open(path: &Path) -> DbResult<Self> {
        let mut conn = Connection::open(path)?;
        conn.busy_timeout(Duration::from_secs(30))?;
        // Switching to WAL does not wait for a process that is making the tables
        // at the same moment (SQLite answers busy at once): try again, a while.
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            match prepare(&mut conn) {
                Err(DbError::Sqlite(e)) if busy(&e) && std::time::Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                other => break other?,
            }
        }
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    pub(super) fn call<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> DbResult<T> + Send + 'static,
    ) -> BoxFuture<'_, DbResult<T>> {
        let conn = self.conn.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                let mut guard = conn
                    .lock()
                    .map_err(|_| DbError::Task("a database call panicked".into()))?;
                f(&mut guard)
            })
            .await
            .map_err(|e| DbError::Task(e.to_string()))?
        })
    }
}

fn thread_row(row: &Row<'_>) -> rusqlite::Result<(ThreadRow, String, String, String)> {
    let status: String = row.get(4)?;
    Ok((
        ThreadRow {
            thread_id: row.get(0)?,
            created_at: row.get(1)?,
            updated_at: row.get(2)?,
            metadata: Map::new(),
            status: ThreadStatus::parse(&status).unwrap_or(ThreadStatus::Idle),
            values: Value::Null,
            interrupts: Value::Null,
        },
        row.get(3)?,
        row.get(5)?,
        row.get(6)?,
    ))
}

fn finish_thread(raw: (ThreadRow, String, String, String)) -> DbResult<ThreadRow> {
    let (mut t, metadata, values, interrupts) = raw;
    t.metadata = parse_object(&metadata, "thread metadata")?;
    t.values = parse_json(&values, "thread values")?;
    t.interrupts = parse_json(&interrupts, "thread interrupts")?;
    Ok(t)
}

type RawRun = (RunRow, String, String, Option<String>);

pub(super) fn run_row(row: &Row<'_>) -> rusqlite::Result<RawRun> {
    let status: String = row.get(5)?;
    Ok((
        RunRow {
            run_id: row.get(0)?,
            thread_id: row.get(1)?,
            assistant_id: row.get(2)?,
            created_at: row.get(3)?,
            updated_at: row.get(4)?,
            status: RunStatus::parse(&status).unwrap_or(RunStatus::Error),
            metadata: Map::new(),
            multitask_strategy: row.get(7)?,
            kwargs: Value::Null,
            attempt: row.get(9)?,
            cancel: row.get(10)?,
            output: None,
        },
        row.get(6)?,
        row.get(8)?,
        row.get(11)?,
    ))
}

pub(super) fn finish_run_row(raw: RawRun) -> DbResult<RunRow> {
    let (mut r, metadata, kwargs, output) = raw;
    r.metadata = parse_object(&metadata, "run metadata")?;
    r.kwargs = parse_json(&kwargs, "run kwargs")?;
    r.output = output.map(|o| parse_json(&o, "run output")).transpose()?;
    Ok(r)
}

pub(super) fn get_thread(conn: &Connection, thread_id: &str) -> DbResult<Option<ThreadRow>> {
    conn.query_row(
        &format!("SELECT {THREAD_COLUMNS} FROM sg_threads WHERE thread_id = ?1"),
        [thread_id],
        thread_row,
    )
    .optional()?
    .map(finish_thread)
    .transpose()
}

pub(super) fn get_run(conn: &Connection, run_id: &str) -> DbResult<Option<RunRow>> {
    conn.query_row(
        &format!("SELECT {RUN_COLUMNS} FROM sg_runs WHERE run_id = ?1"),
        [run_id],
        run_row,
    )
    .optional()?
    .map(finish_run_row)
    .transpose()
}

pub(super) fn insert_thread(
    conn: &Connection,
    thread_id: &str,
    metadata: &Map<String, Value>,
    now: i64,
) -> DbResult<()> {
    conn.execute(
        "INSERT INTO sg_threads (thread_id, created_at, updated_at, metadata, status, state_values, interrupts)
         VALUES (?1, ?2, ?2, ?3, 'idle', '{}', '[]')",
        params![thread_id, now, Value::Object(metadata.clone()).to_string()],
    )?;
    Ok(())
}

/// Whether `thread_id` has a pending or running run.
pub(super) fn has_active_run(conn: &Connection, thread_id: &str) -> DbResult<bool> {
    Ok(conn
        .query_row(
            "SELECT 1 FROM sg_runs WHERE thread_id = ?1 AND status IN ('pending', 'running') LIMIT 1",
            [thread_id],
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}

/// Asks the thread's active runs to stop: pending ones end (or go, for a rollback)
/// at once; running ones are flagged for their worker.
pub(super) fn stop_active(
    conn: &Connection,
    thread_id: &str,
    action: &str,
    now: i64,
) -> DbResult<()> {
    if action == "rollback" {
        conn.execute(
            "DELETE FROM sg_runs WHERE thread_id = ?1 AND status = 'pending'",
            [thread_id],
        )?;
    } else {
        conn.execute(
            "UPDATE sg_runs SET status = 'interrupted', updated_at = ?2, ended_at = ?2
             WHERE thread_id = ?1 AND status = 'pending'",
            params![thread_id, now],
        )?;
    }
    conn.execute(
        "UPDATE sg_runs SET cancel = ?2, updated_at = ?3 WHERE thread_id = ?1 AND status = 'running'",
        params![thread_id, action, now],
    )?;
    Ok(())
}

impl Db for SqliteDb {}

/// Every thread matching `query`, most recently updated first.
pub(super) fn matching_threads(conn: &Connection, query: &ThreadQuery) -> DbResult<Vec<ThreadRow>> {
    let mut stmt = conn.prepare(&format!(
        "SELECT {THREAD_COLUMNS} FROM sg_threads WHERE (?1 IS NULL OR status = ?1)
         ORDER BY updated_at DESC, thread_id"
    ))?;
    let rows = stmt.query_map([query.status.map(ThreadStatus::as_str)], thread_row)?;
    let mut out = Vec::new();
    for raw in rows {
        let t = finish_thread(raw?)?;
        if contains(&Value::Object(t.metadata.clone()), &query.metadata)
            && contains(&t.values, &query.values)
            && query
                .ids
                .as_ref()
                .is_none_or(|ids| ids.contains(&t.thread_id))
        {
            out.push(t);
        }
    }
    out.sort_by(|a, b| {
        let by = match query.order {
            ThreadOrder::ThreadId => std::cmp::Ordering::Equal,
            ThreadOrder::Status => a.status.as_str().cmp(b.status.as_str()),
            ThreadOrder::CreatedAt => a.created_at.cmp(&b.created_at),
            ThreadOrder::UpdatedAt => a.updated_at.cmp(&b.updated_at),
        }
        .then_with(|| a.thread_id.cmp(&b.thread_id));
        if query.ascending { by } else { by.reverse() }
    });
    Ok(out)
}

/// Whether SQLite refused because another connection holds the file.
fn busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// Sets the file's journal up and creates the tables and columns, under one write
/// lock: processes opening the file together create them once.
fn prepare(conn: &mut Connection) -> DbResult<()> {
    conn.pragma_update(None, "journal_mode", "WAL")?;
    // The queue's own commits do not wait for the disk: in WAL mode a commit is
    // durable against a crash of the process (what the queue must survive); the
    // checkpoint saver's commits, which fsync, carry them to the disk with theirs.
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    tx.execute_batch(SCHEMA)?;
    for (table, column, kind) in ADDED_COLUMNS {
        let present: Option<i64> = tx
            .query_row(
                &format!("SELECT 1 FROM pragma_table_info('{table}') WHERE name = ?1"),
                [column],
                |row| row.get(0),
            )
            .optional()?;
        if present.is_none() {
            tx.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN {column} {kind}"))?;
        }
    }
    // After the columns it names exist.
    tx.execute_batch(
        "CREATE INDEX IF NOT EXISTS sg_threads_ttl ON sg_threads (updated_at) WHERE ttl_ms IS NOT NULL",
    )?;
    tx.commit()?;
    Ok(())
}
