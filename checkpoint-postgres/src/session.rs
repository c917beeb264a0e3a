//! The lock session: the one connection on which a saver holds its threads' advisory
//! locks, opened from the saver's URL or taken from the user's pool.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use deadpool_postgres::Pool;
use tokio_postgres::Statement;
use tokio_postgres::types::ToSql;

use crate::error::{Failure, PostgresError, describe, within};
use crate::tls::{self, Tls};

/// Where a lock session comes from.
#[derive(Clone)]
pub(crate) enum SessionSource {
    /// A connection of its own, outside the pool, made like the pool's.
    Connect {
        pg: Box<tokio_postgres::Config>,
        tls: Tls,
        target: String,
        deadline: Duration,
    },
    /// A connection taken from the user's pool and kept.
    Pool {
        pool: Pool,
        target: String,
        deadline: Duration,
    },
}

enum Client {
    Own(tokio_postgres::Client),
    Pooled(deadpool_postgres::Object),
}

/// What a lock wrote: a new fence of its thread, which the holder's saves check.
pub(crate) struct Fence {
    /// The fence table, qualified by its schema.
    table: String,
    thread_id: String,
    /// The fence (a UUID, as text).
    pub(crate) id: String,
}

/// An open lock session.
pub(crate) struct Session {
    client: Client,
    pid: i32,
    deadline: Duration,
    /// Its lock and unlock statements, prepared once (by their SQL): one round trip
    /// per request instead of two, on the connection every run's lock goes through.
    prepared: Mutex<HashMap<String, Statement>>,
}

impl Session {
    /// Opens a session on the current runtime (which then drives its connection), for
    /// a lock on `thread_id` (named if it fails).
    pub(crate) async fn open(source: &SessionSource, thread_id: &str) -> Result<Self, Failure> {
        let (target, deadline) = match source {
            SessionSource::Connect {
                target, deadline, ..
            }
            | SessionSource::Pool {
                target, deadline, ..
            } => (target, *deadline),
        };
        let step = || format!("opening the saver's lock session (to lock thread `{thread_id}`)");
        within(deadline, step, target, async {
            let client = match source {
                SessionSource::Connect { pg, tls, .. } => {
                    let (client, connection) = pg
                        .connect(tls.connector.clone())
                        .await
                        .map_err(|e| tls::connect_failure(target, tls.mode, &e))?;
                    tokio::spawn(async move {
                        let _ = connection.await;
                    });
                    Client::Own(client)
                }
                SessionSource::Pool { pool, .. } => {
                    Client::Pooled(pool.get().await.map_err(|e| PostgresError::Connect {
                        target: target.clone(),
                        reason: match &e {
                            deadpool_postgres::PoolError::Backend(e) => describe(e),
                            other => other.to_string(),
                        },
                    })?)
                }
            };
            let mut session = Session {
                client,
                pid: 0,
                deadline,
                prepared: Mutex::default(),
            };
            // A holder whose machine vanishes (rather than its process dying, which
            // closes the connection at once) is noticed by the server within about a
            // minute, not hours.
            //
            // Fences are written without waiting for the disk: a fence lost in a
            // server crash was followed by no durable save of its holder (a save's
            // commit flushes the log up to it, the fence included), the locks end with
            // the server anyway, and a lost delete leaves a fence the next lock
            // replaces.
            session
                .client()
                .batch_execute(
                    "SET tcp_keepalives_idle = 30; SET tcp_keepalives_interval = 10;
                     SET tcp_keepalives_count = 3; SET synchronous_commit = off",
                )
                .await?;
            session.pid = session
                .client()
                .query_one("SELECT pg_backend_pid()", &[])
                .await?
                .try_get(0)?;
            Ok(session)
        })
        .await
    }

    fn client(&self) -> &tokio_postgres::Client {
        match &self.client {
            Client::Own(client) => client,
            Client::Pooled(object) => object,
        }
    }

    /// The server backend of the session.
    pub(crate) fn pid(&self) -> i32 {
        self.pid
    }

    /// Whether the connection has ended.
    pub(crate) fn is_closed(&self) -> bool {
        self.client().is_closed()
    }

    /// Runs `query` within the deadline, failing with a description when it fails or
    /// does not answer in time (the session is then given up).
    async fn within<T>(
        &self,
        query: impl std::future::Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Result<T, String> {
        match tokio::time::timeout(self.deadline, query).await {
            Ok(Ok(out)) => Ok(out),
            Ok(Err(e)) => Err(describe(&e)),
            Err(_) => Err(format!(
                "the lock session did not answer within {} s",
                self.deadline.as_secs_f64()
            )),
        }
    }

    /// `sql`, prepared on this session the first time it is asked for.
    async fn statement(&self, sql: String) -> Result<Statement, tokio_postgres::Error> {
        let known = self
            .prepared
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&sql)
            .cloned();
        if let Some(statement) = known {
            return Ok(statement);
        }
        let statement = self.client().prepare(&sql).await?;
        self.prepared
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(sql, statement.clone());
        Ok(statement)
    }

    /// Runs `sql` (prepared once) with `params`: its row, if any.
    async fn query_opt(
        &self,
        sql: String,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<tokio_postgres::Row>, tokio_postgres::Error> {
        let statement = self.statement(sql).await?;
        self.client().query_opt(&statement, params).await
    }

    /// Takes `key` for `thread_id` if no session holds it, and then gives the thread a
    /// new fence in `table` (the schema's `stategraph_thread_locks`, qualified): the
    /// fence, or `None` when another session holds the key.
    ///
    /// Taking the lock and writing the fence are one statement. Should the write fail,
    /// the caller gives the session up, and the lock with it.
    pub(crate) async fn try_lock(
        &self,
        key: i64,
        thread_id: &str,
        table: &str,
    ) -> Result<Option<Fence>, String> {
        let sql = format!(
            "WITH got AS (SELECT pg_try_advisory_lock($1) AS locked)
             INSERT INTO {table} (thread_id, fence)
             SELECT $2, gen_random_uuid() FROM got WHERE locked
             ON CONFLICT (thread_id) DO UPDATE SET fence = excluded.fence
             RETURNING fence::text"
        );
        let row = self
            .within(self.query_opt(sql, &[&key, &thread_id]))
            .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        Ok(Some(Fence {
            table: table.to_string(),
            thread_id: thread_id.to_string(),
            id: row.try_get(0).map_err(|e| describe(&e))?,
        }))
    }

    /// Lets go of `key`, deleting the fence its lock wrote (in one statement).
    pub(crate) async fn unlock(&self, key: i64, fence: &Fence) -> Result<(), String> {
        let sql = format!(
            "WITH gone AS (DELETE FROM {} WHERE thread_id = $2 AND fence = $3::text::uuid)
             SELECT pg_advisory_unlock($1)",
            fence.table
        );
        let params: [&(dyn ToSql + Sync); 3] = [&key, &fence.thread_id, &fence.id];
        self.within(self.query_opt(sql, &params)).await.map(drop)
    }

    /// Ends the session. A pooled one goes back to the pool, so it first lets go of
    /// anything it still holds, and commits wait for the disk again.
    pub(crate) async fn close(self) {
        if let Client::Pooled(object) = &self.client {
            let release =
                object.batch_execute("SELECT pg_advisory_unlock_all(); RESET synchronous_commit");
            if !matches!(
                tokio::time::timeout(self.deadline, release).await,
                Ok(Ok(()))
            ) {
                // Not known to be released: keep the connection out of the pool.
                if let Client::Pooled(object) = self.client {
                    drop(deadpool_postgres::Object::take(object));
                }
            }
        }
    }
}
