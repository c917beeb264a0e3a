//! The lock session: the one connection on which a saver holds its threads' advisory
//! locks, opened from the saver's URL or taken from the user's pool.

use std::time::Duration;

use deadpool_postgres::Pool;

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

/// An open lock session.
pub(crate) struct Session {
    client: Client,
    pid: i32,
    deadline: Duration,
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
            };
            // A holder whose machine vanishes (rather than its process dying, which
            // closes the connection at once) is noticed by the server within about a
            // minute, not hours.
            session
                .client()
                .batch_execute(
                    "SET tcp_keepalives_idle = 30; SET tcp_keepalives_interval = 10;
                     SET tcp_keepalives_count = 3",
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

    /// The server backend of the session (as `pg_locks` shows it).
    pub(crate) fn pid(&self) -> i32 {
        self.pid
    }

    /// Whether the connection has ended.
    pub(crate) fn is_closed(&self) -> bool {
        self.client().is_closed()
    }

    /// Runs `sql` with `key`, failing with a description when it fails or does not
    /// answer within the deadline (the session is then given up).
    async fn ask(&self, sql: &str, key: i64) -> Result<bool, String> {
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 1] = [&key];
        let query = self.client().query_one(sql, &params);
        match tokio::time::timeout(self.deadline, query).await {
            Ok(Ok(row)) => row.try_get(0).map_err(|e| describe(&e)),
            Ok(Err(e)) => Err(describe(&e)),
            Err(_) => Err(format!(
                "the lock session did not answer within {} s",
                self.deadline.as_secs_f64()
            )),
        }
    }

    /// Takes `key` if no session holds it.
    pub(crate) async fn try_lock(&self, key: i64) -> Result<bool, String> {
        self.ask("SELECT pg_try_advisory_lock($1)", key).await
    }

    /// Lets go of `key`.
    pub(crate) async fn unlock(&self, key: i64) -> Result<(), String> {
        self.ask("SELECT pg_advisory_unlock($1)", key)
            .await
            .map(drop)
    }

    /// Ends the session. A pooled one goes back to the pool, so it first lets go of
    /// anything it still holds.
    pub(crate) async fn close(self) {
        if let Client::Pooled(object) = &self.client {
            let release = object.batch_execute("SELECT pg_advisory_unlock_all()");
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
