//! The server's tables in PostgreSQL: many processes share one database, so every
//! change that decides something (a run's strategy, a claim) locks the rows it
//! decides on, and leases are timed by the database's clock (`now()`), never a
//! process's.

use std::sync::Mutex;
use std::time::Duration;

mod assistants;
mod crons;
mod outbox;
mod queue;
mod retention;
mod threads;

use serde_json::{Map, Value};
use stategraph::BoxFuture;
use stategraph_postgres::deadpool_postgres::{Object, Pool};
use stategraph_postgres::{PostgresListener, PostgresOptions, connect_listener, connect_pool};
use tokio_postgres::Row;

use super::{Db, DbError, DbResult, RunRow, RunStatus, ThreadRow, ThreadStatus};
use crate::hub::{Hub, Notice};

/// The `NOTIFY` channel the server's processes talk on.
const CHANNEL: &str = "stategraph_server";

/// The first key of the server's transaction-level advisory locks (the two-key form,
/// apart from the saver's one-key locks).
const LOCK_CLASS: i32 = 0x5347_0001;

/// Milliseconds since the Unix epoch, by the database's clock.
pub(super) const NOW_MS: &str = "(extract(epoch from now()) * 1000)::bigint";

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS sg_threads (
    thread_id TEXT PRIMARY KEY,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    metadata JSONB NOT NULL,
    status TEXT NOT NULL,
    state_values JSONB NOT NULL,
    interrupts JSONB NOT NULL
);
CREATE INDEX IF NOT EXISTS sg_threads_updated ON sg_threads (updated_at DESC);
CREATE INDEX IF NOT EXISTS sg_threads_metadata ON sg_threads USING GIN (metadata jsonb_path_ops);
CREATE TABLE IF NOT EXISTS sg_runs (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id TEXT NOT NULL UNIQUE,
    thread_id TEXT NOT NULL,
    assistant_id TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    status TEXT NOT NULL,
    metadata JSONB NOT NULL,
    multitask_strategy TEXT NOT NULL,
    kwargs JSONB NOT NULL,
    attempt INTEGER NOT NULL DEFAULT 0,
    cancel TEXT,
    output JSONB,
    worker TEXT,
    lease_until TIMESTAMPTZ,
    ended_at BIGINT
);
CREATE INDEX IF NOT EXISTS sg_runs_thread ON sg_runs (thread_id, seq);
CREATE INDEX IF NOT EXISTS sg_runs_active ON sg_runs (seq) WHERE status IN ('pending', 'running');
CREATE TABLE IF NOT EXISTS sg_run_events (
    run_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    event TEXT NOT NULL,
    data JSONB NOT NULL,
    PRIMARY KEY (run_id, seq)
);
ALTER TABLE sg_runs ADD COLUMN IF NOT EXISTS run_after BIGINT;
ALTER TABLE sg_threads ADD COLUMN IF NOT EXISTS ttl_ms BIGINT;
ALTER TABLE sg_threads ADD COLUMN IF NOT EXISTS ttl_strategy TEXT;
ALTER TABLE sg_threads ADD COLUMN IF NOT EXISTS swept_at BIGINT;
ALTER TABLE sg_threads ADD COLUMN IF NOT EXISTS sweep_hold BIGINT;
CREATE INDEX IF NOT EXISTS sg_threads_ttl ON sg_threads (updated_at) WHERE ttl_ms IS NOT NULL;
CREATE TABLE IF NOT EXISTS sg_crons (
    cron_id TEXT PRIMARY KEY,
    assistant_id TEXT NOT NULL,
    thread_id TEXT,
    schedule TEXT NOT NULL,
    timezone TEXT,
    end_time BIGINT,
    enabled BOOLEAN NOT NULL,
    on_run_completed TEXT,
    payload JSONB NOT NULL,
    metadata JSONB NOT NULL,
    next_run_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS sg_crons_due ON sg_crons (next_run_at) WHERE enabled;
CREATE TABLE IF NOT EXISTS sg_webhooks (
    delivery_id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL,
    url TEXT NOT NULL,
    body JSONB NOT NULL,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    ended_at BIGINT,
    last_error TEXT
);
CREATE INDEX IF NOT EXISTS sg_webhooks_due ON sg_webhooks (next_attempt_at) WHERE state = 'pending';
CREATE TABLE IF NOT EXISTS sg_assistants (
    assistant_id TEXT PRIMARY KEY,
    graph_id TEXT NOT NULL,
    name TEXT NOT NULL,
    description TEXT,
    config JSONB NOT NULL,
    context JSONB NOT NULL,
    metadata JSONB NOT NULL,
    version INTEGER NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS sg_assistant_versions (
    assistant_id TEXT NOT NULL,
    graph_id TEXT NOT NULL,
    name TEXT NOT NULL,
    description TEXT,
    config JSONB NOT NULL,
    context JSONB NOT NULL,
    metadata JSONB NOT NULL,
    version INTEGER NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (assistant_id, version)
);
";

pub(super) const RUN_COLUMNS: &str = "run_id, thread_id, assistant_id, created_at, updated_at, status, \
     metadata, multitask_strategy, kwargs, attempt, cancel, output";
pub(super) const THREAD_COLUMNS: &str =
    "thread_id, created_at, updated_at, metadata, status, state_values, interrupts";

/// The tables in a PostgreSQL database, on a pool connected as the saver connects,
/// plus one `LISTEN` connection once [`Db::listen`] started it.
pub(crate) struct PgDb {
    pool: Pool,
    url: String,
    options: PostgresOptions,
    listening: Mutex<Option<tokio::task::AbortHandle>>,
}

/// The relations `SCHEMA` creates.
const RELATIONS: &[&str] = &[
    "sg_threads",
    "sg_threads_updated",
    "sg_threads_metadata",
    "sg_runs",
    "sg_runs_thread",
    "sg_runs_active",
    "sg_run_events",
    "sg_crons",
    "sg_crons_due",
    "sg_webhooks",
    "sg_webhooks_due",
    "sg_assistants",
    "sg_assistant_versions",
    "sg_threads_ttl",
];

/// Whether every relation of `SCHEMA` exists in the connection's schema.
async fn tables_ready(
    client: &impl stategraph_postgres::deadpool_postgres::GenericClient,
) -> DbResult<bool> {
    let names: Vec<String> = RELATIONS.iter().map(|r| (*r).to_string()).collect();
    let row = client
        .query_one(
            "SELECT count(*) FROM unnest($1::text[]) AS r(name) WHERE to_regclass(r.name) IS NOT NULL",
            &[&names],
        )
        .await?;
    let found: i64 = row.get(0);
    Ok(usize::try_from(found).unwrap_or(0) == RELATIONS.len())
}

impl PgDb {
    /// Connects to the database at `url` and creates the tables if missing (under a
    /// transaction-level advisory lock: processes starting together create them once).
    pub(crate) async fn connect(url: &str, options: PostgresOptions) -> DbResult<Self> {
        let pool = connect_pool(url, &options)
            .await
            .map_err(|e| DbError::Connect(crate::error::error_chain(&e)))?;
        let db = Self {
            pool,
            url: url.to_string(),
            options,
            listening: Mutex::new(None),
        };
        let mut client = db.client().await?;
        // `CREATE INDEX IF NOT EXISTS` locks its table even when the index exists, and
        // would deadlock with other processes' workers claiming runs: a process joining
        // a running fleet only reads whether the tables are there.
        if !tables_ready(&client).await? {
            let tx = client.transaction().await?;
            tx.execute("SELECT pg_advisory_xact_lock($1, 0)", &[&LOCK_CLASS])
                .await?;
            if !tables_ready(&tx).await? {
                tx.batch_execute(SCHEMA).await?;
            }
            tx.commit().await?;
        }
        Ok(db)
    }

    /// A pooled connection.
    pub(super) async fn client(&self) -> DbResult<Object> {
        self.pool
            .get()
            .await
            .map_err(|e| DbError::Connect(crate::error::error_chain(&e)))
    }
}

impl Drop for PgDb {
    fn drop(&mut self) {
        if let Ok(mut task) = self.listening.lock()
            && let Some(task) = task.take()
        {
            task.abort();
        }
    }
}

/// The client of a pooled connection.
pub(super) fn pg(c: &Object) -> &tokio_postgres::Client {
    c
}

/// A duration in (fractional) milliseconds, for `$n * interval '1 millisecond'`.
pub(super) fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

pub(super) fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// A row of [`THREAD_COLUMNS`].
pub(super) fn thread_row(row: &Row) -> DbResult<ThreadRow> {
    let status: String = row.try_get(4)?;
    Ok(ThreadRow {
        thread_id: row.try_get(0)?,
        created_at: row.try_get(1)?,
        updated_at: row.try_get(2)?,
        metadata: object(row.try_get(3)?),
        status: ThreadStatus::parse(&status).unwrap_or(ThreadStatus::Idle),
        values: row.try_get(5)?,
        interrupts: row.try_get(6)?,
    })
}

/// A row of [`RUN_COLUMNS`].
pub(super) fn run_row(row: &Row) -> DbResult<RunRow> {
    let status: String = row.try_get(5)?;
    Ok(RunRow {
        run_id: row.try_get(0)?,
        thread_id: row.try_get(1)?,
        assistant_id: row.try_get(2)?,
        created_at: row.try_get(3)?,
        updated_at: row.try_get(4)?,
        status: RunStatus::parse(&status).unwrap_or(RunStatus::Error),
        metadata: object(row.try_get(6)?),
        multitask_strategy: row.try_get(7)?,
        kwargs: row.try_get(8)?,
        attempt: row.try_get(9)?,
        cancel: row.try_get(10)?,
        output: row.try_get(11)?,
    })
}

/// Connects the `LISTEN` connection and listens on [`CHANNEL`].
async fn open_listener(url: &str, options: &PostgresOptions) -> DbResult<PostgresListener> {
    let listener = connect_listener(url, options)
        .await
        .map_err(|e| DbError::Connect(crate::error::error_chain(&e)))?;
    listener
        .client()
        .batch_execute(&format!("LISTEN {CHANNEL}"))
        .await?;
    Ok(listener)
}

/// How often the listening connection is asked whether it is still alive.
const PING: Duration = Duration::from_secs(2);

/// Forwards notices from `listener` to `hub`; when the connection drops, connects
/// again with backoff (meanwhile workers and streams re-check on their own timers).
async fn forward(url: String, options: PostgresOptions, mut listener: PostgresListener, hub: Hub) {
    loop {
        let mut ping = tokio::time::interval(PING);
        ping.tick().await;
        loop {
            tokio::select! {
                n = listener.recv() => match n {
                    Some(n) => {
                        if let Some(notice) = Notice::decode(n.payload()) {
                            hub.local(notice);
                        }
                    }
                    None => break,
                },
                _ = ping.tick() => {
                    // LISTEN again as the ping: a no-op on a live session, and what
                    // the session shows as its last statement stays `LISTEN`.
                    let alive = tokio::time::timeout(PING, listener.client().batch_execute(&format!("LISTEN {CHANNEL}"))).await;
                    if !matches!(alive, Ok(Ok(_))) {
                        break;
                    }
                }
            }
        }
        tracing::warn!("the PostgreSQL LISTEN connection was lost; reconnecting");
        let mut backoff = Duration::from_millis(100);
        listener = loop {
            tokio::time::sleep(backoff).await;
            match open_listener(&url, &options).await {
                Ok(l) => break l,
                Err(e) => {
                    tracing::warn!(error = %e, retry_in = ?backoff, "reconnecting the PostgreSQL LISTEN connection failed");
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                }
            }
        };
        tracing::info!("the PostgreSQL LISTEN connection is back");
        // Notices sent meanwhile are lost: have everyone look again.
        hub.local(Notice::Queued);
    }
}

impl Db for PgDb {
    fn publish(&self, notice: &Notice) -> BoxFuture<'_, DbResult<()>> {
        let payload = notice.encode();
        Box::pin(async move {
            let client = self.client().await?;
            client
                .execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &payload])
                .await?;
            Ok(())
        })
    }

    fn listen(&self, hub: Hub) -> BoxFuture<'_, DbResult<()>> {
        Box::pin(async move {
            let listener = open_listener(&self.url, &self.options).await?;
            let task = tokio::spawn(forward(
                self.url.clone(),
                self.options.clone(),
                listener,
                hub,
            ));
            if let Ok(mut slot) = self.listening.lock()
                && let Some(old) = slot.replace(task.abort_handle())
            {
                old.abort();
            }
            Ok(())
        })
    }
}

/// The first key of the lock an append to a run's events takes (the second is the
/// run id's hash), so the sequence numbers of one run never collide.
pub(super) const EVENTS_LOCK_CLASS: i32 = LOCK_CLASS + 1;
