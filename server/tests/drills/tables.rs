//! What the drills read straight from the database: runs by status and holder, how
//! they ended, and whether a killed process's sessions are gone.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::Backend;

/// A run as the database ended it.
pub(crate) struct Ended {
    pub(crate) status: String,
    pub(crate) attempt: i32,
    /// Microseconds since the Unix epoch.
    pub(crate) at_us: i64,
}

/// Reads the runs and who holds running ones straight from the database.
pub(crate) enum Tables {
    Postgres(tokio_postgres::Client),
    Sqlite(std::path::PathBuf),
}

impl Tables {
    pub(crate) async fn open(backend: &Backend) -> Self {
        match backend {
            Backend::Postgres { url, schema } => {
                let (client, connection) =
                    tokio_postgres::connect(crate::pg::plain(url), tokio_postgres::NoTls)
                        .await
                        .expect("a connection for the drill's checks");
                tokio::spawn(connection);
                client
                    .batch_execute(&format!("SET search_path TO \"{schema}\""))
                    .await
                    .expect("search_path");
                Self::Postgres(client)
            }
            Backend::Sqlite { dir } => Self::Sqlite(dir.join("drill.sqlite")),
        }
    }

    /// How many runs are running under workers whose name starts with `prefix`
    /// (all of them for an empty prefix), and how many are pending or running.
    pub(crate) async fn active(&self, prefix: &str) -> (i64, i64) {
        let held = "SELECT count(*) FROM sg_runs WHERE status = 'running' AND worker LIKE ";
        let left = "SELECT count(*) FROM sg_runs WHERE status IN ('pending', 'running')";
        let pattern = format!("{prefix}%");
        match self {
            Self::Postgres(db) => {
                let held = db
                    .query_one(&format!("{held} $1"), &[&pattern])
                    .await
                    .expect("a count");
                let left = db.query_one(left, &[]).await.expect("a count");
                (held.get(0), left.get(0))
            }
            Self::Sqlite(path) => {
                let db = rusqlite::Connection::open(path).expect("the drill's database");
                db.busy_timeout(Duration::from_secs(5))
                    .expect("a busy timeout");
                let held = db
                    .query_row(&format!("{held} ?1"), [&pattern], |r| r.get(0))
                    .expect("a count");
                let left = db.query_row(left, [], |r| r.get(0)).expect("a count");
                (held, left)
            }
        }
    }

    /// The runs, as (thread, tag), running under workers named `{prefix}…`.
    pub(crate) async fn held(&self, prefix: &str) -> Vec<(String, String)> {
        let pattern = format!("{prefix}%");
        match self {
            Self::Postgres(db) => db
                .query(
                    "SELECT thread_id, kwargs->'input'->>'tag' FROM sg_runs
                     WHERE status = 'running' AND worker LIKE $1",
                    &[&pattern],
                )
                .await
                .expect("the held runs")
                .iter()
                .map(|r| (r.get(0), r.get(1)))
                .collect(),
            Self::Sqlite(path) => {
                let db = rusqlite::Connection::open(path).expect("the drill's database");
                let mut q = db
                    .prepare(
                        "SELECT thread_id, json_extract(kwargs, '$.input.tag') FROM sg_runs
                         WHERE status = 'running' AND worker LIKE ?1",
                    )
                    .expect("a query");
                q.query_map([&pattern], |r| Ok((r.get(0)?, r.get(1)?)))
                    .expect("the held runs")
                    .map(|r| r.expect("a run"))
                    .collect()
            }
        }
    }

    /// Waits for the sessions of a killed process to end (PostgreSQL), so what it
    /// held is final.
    pub(crate) async fn wait_sessions_gone(&self, session: &str) {
        let Self::Postgres(db) = self else {
            return;
        };
        let gone = Instant::now();
        loop {
            let left: i64 = db
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
                    &[&session],
                )
                .await
                .expect("a count")
                .get(0);
            if left == 0 {
                return;
            }
            assert!(
                gone.elapsed() < Duration::from_secs(10),
                "the killed process's sessions linger"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Every run by (thread, tag).
    pub(crate) async fn ended(&self) -> HashMap<(String, String), Ended> {
        let rows: Vec<(String, String, String, i32, i64)> = match self {
            Self::Postgres(db) => db
                .query(
                    "SELECT thread_id, kwargs->'input'->>'tag', status, attempt, coalesce(ended_at, 0)
                     FROM sg_runs",
                    &[],
                )
                .await
                .expect("the runs")
                .iter()
                .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4)))
                .collect(),
            Self::Sqlite(path) => {
                let db = rusqlite::Connection::open(path).expect("the drill's database");
                let mut q = db
                    .prepare(
                        "SELECT thread_id, json_extract(kwargs, '$.input.tag'), status, attempt,
                                coalesce(ended_at, 0) FROM sg_runs",
                    )
                    .expect("a query");
                q.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
                    .expect("the runs")
                    .map(|r| r.expect("a run"))
                    .collect()
            }
        };
        rows.into_iter()
            .map(|(thread, tag, status, attempt, ended_ms)| {
                let run = Ended {
                    status,
                    attempt,
                    at_us: ended_ms.saturating_mul(1000),
                };
                ((thread, tag), run)
            })
            .collect()
    }

    /// The runs a cron made, as (tick, ticks missed before it), straight from the
    /// runs table.
    pub(crate) async fn cron_runs(&self, cron_id: &str) -> Vec<(String, i64)> {
        match self {
            Self::Postgres(db) => db
                .query(
                    "SELECT metadata->>'cron_tick', coalesce((metadata->>'cron_missed')::bigint, 0)
                     FROM sg_runs WHERE metadata->>'cron_id' = $1",
                    &[&cron_id],
                )
                .await
                .expect("the cron's runs")
                .iter()
                .map(|r| (r.get(0), r.get(1)))
                .collect(),
            Self::Sqlite(path) => {
                let db = rusqlite::Connection::open(path).expect("the drill's database");
                db.busy_timeout(Duration::from_secs(5))
                    .expect("a busy timeout");
                let mut q = db
                    .prepare(
                        "SELECT json_extract(metadata, '$.cron_tick'),
                                coalesce(json_extract(metadata, '$.cron_missed'), 0)
                         FROM sg_runs WHERE json_extract(metadata, '$.cron_id') = ?1",
                    )
                    .expect("a query");
                q.query_map([cron_id], |r| Ok((r.get(0)?, r.get(1)?)))
                    .expect("the cron's runs")
                    .map(|r| r.expect("a run"))
                    .collect()
            }
        }
    }

    /// The state of the webhook call a run queued (`pending`, `delivered`, `failed`).
    pub(crate) async fn webhook_state(&self, run_id: &str) -> Option<String> {
        match self {
            Self::Postgres(db) => db
                .query_opt(
                    "SELECT state FROM sg_webhooks WHERE run_id = $1",
                    &[&run_id],
                )
                .await
                .expect("the call's state")
                .map(|r| r.get(0)),
            Self::Sqlite(path) => {
                let db = rusqlite::Connection::open(path).expect("the drill's database");
                db.busy_timeout(Duration::from_secs(5))
                    .expect("a busy timeout");
                db.query_row(
                    "SELECT state FROM sg_webhooks WHERE run_id = ?1",
                    [run_id],
                    |r| r.get(0),
                )
                .ok()
            }
        }
    }
}
