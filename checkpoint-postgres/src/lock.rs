//! One writer per thread across processes and machines: a session-level advisory lock
//! keyed by a hash of the thread id, held on a connection of its own. The server
//! releases it when that session ends — when the guard is dropped, or when the process
//! holding it dies and its connection closes.

use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use stategraph::checkpoint::{CheckpointError, SaverResult, ThreadLock};
use tokio_postgres::NoTls;

use crate::error::{Failure, PostgresError, describe};
use crate::saver::PostgresSaver;

/// The advisory lock key of `thread_id` in `schema`: 64 bits of a hash, so distinct
/// threads share a key only by a negligible chance (and then merely take turns).
pub(crate) fn lock_key(schema: &str, thread_id: &str) -> i64 {
    let mut hasher = Sha256::new();
    hasher.update(b"stategraph-thread\0");
    hasher.update(schema.as_bytes());
    hasher.update(b"\0");
    hasher.update(thread_id.as_bytes());
    let digest = hasher.finalize();
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    i64::from_be_bytes(bytes)
}

/// The session holding a lock: dropping the client ends it, which releases the lock.
struct Session {
    _client: tokio_postgres::Client,
}

pub(crate) async fn lock_thread(
    saver: &PostgresSaver,
    thread_id: &str,
    wait: Duration,
) -> Result<ThreadLock, Failure> {
    if tokio::runtime::Handle::try_current().is_err() {
        return Err(PostgresError::NoRuntime.into());
    }
    let (client, connection) =
        saver
            .pg
            .connect(NoTls)
            .await
            .map_err(|e| PostgresError::Connect {
                target: saver.target.clone(),
                reason: describe(&e),
            })?;
    // Ends when the client is dropped (or the connection breaks).
    tokio::spawn(connection);
    // A holder whose machine vanishes (rather than its process dying, which closes the
    // connection at once) is noticed by the server within about a minute, not hours.
    client
        .batch_execute(
            "SET tcp_keepalives_idle = 30; SET tcp_keepalives_interval = 10;
             SET tcp_keepalives_count = 3",
        )
        .await?;
    let key = lock_key(&saver.schema, thread_id);
    let started = Instant::now();
    loop {
        let row = client
            .query_one("SELECT pg_try_advisory_lock($1)", &[&key])
            .await?;
        if row.try_get::<_, bool>(0)? {
            return Ok(ThreadLock::new(thread_id, Session { _client: client }));
        }
        let waited = started.elapsed();
        if waited >= wait {
            return Err(CheckpointError::ThreadBusy {
                thread_id: thread_id.to_string(),
                waited,
            }
            .into());
        }
        tokio::time::sleep(saver.options.lock_poll.min(wait - waited)).await;
    }
}

pub(crate) async fn lock(
    saver: &PostgresSaver,
    thread_id: &str,
    wait: Duration,
) -> SaverResult<ThreadLock> {
    lock_thread(saver, thread_id, wait)
        .await
        .map_err(|f| f.during("lock_thread"))
}

#[cfg(test)]
mod tests {
    use super::lock_key;

    #[test]
    fn keys_are_stable_and_depend_on_schema_and_thread() {
        assert_eq!(lock_key("public", "t"), lock_key("public", "t"));
        assert_ne!(lock_key("public", "t"), lock_key("public", "u"));
        assert_ne!(lock_key("public", "t"), lock_key("other", "t"));
        // Processes of different builds must agree on the key: it may never change.
        assert_eq!(lock_key("public", "t"), 1_947_032_391_631_118_727);
    }
}
