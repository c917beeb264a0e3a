//! One writer per thread across processes and machines: a session-level advisory lock
//! keyed by a hash of the thread id, held on a connection of its own. The server
//! releases it when that session ends — when the guard is dropped (which closes the
//! connection), or when the process holding it dies.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use stategraph::checkpoint::{CheckpointError, SaverResult, ThreadLock};
use tokio_postgres::tls::MakeTlsConnect;
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::error::{Failure, PostgresError, within};
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

/// The lock session's connection: the client and the socket it talks through.
type Connection = tokio_postgres::Connection<
    tokio_postgres::Socket,
    <MakeRustlsConnect as MakeTlsConnect<tokio_postgres::Socket>>::Stream,
>;

/// The session holding a lock. It owns its socket (no task of the runtime does), so
/// dropping it closes the connection at once — even when the runtime is not running
/// or is gone — and the server then ends the session and releases the lock.
struct Session {
    _client: tokio_postgres::Client,
    // Never locked: the mutex only makes the session shareable between threads.
    _connection: std::sync::Mutex<Connection>,
}

/// Runs `query` while driving `connection` (which carries its messages).
async fn drive<T>(
    connection: &mut Connection,
    query: impl Future<Output = Result<T, tokio_postgres::Error>>,
) -> Result<T, Failure> {
    let mut query = std::pin::pin!(query);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(result) = query.as_mut().poll(cx) {
            return Poll::Ready(result.map_err(Failure::from));
        }
        match Pin::new(&mut *connection).poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Err(e)) => Poll::Ready(Err(e.into())),
            // The server closed the connection; the query will not finish.
            Poll::Ready(Ok(())) => Poll::Ready(Err(PostgresError::Connect {
                target: String::new(),
                reason: "the server closed the lock connection".into(),
            }
            .into())),
        }
    })
    .await
}

pub(crate) async fn lock_thread(
    saver: &PostgresSaver,
    thread_id: &str,
    wait: Duration,
) -> Result<ThreadLock, Failure> {
    if tokio::runtime::Handle::try_current().is_err() {
        return Err(PostgresError::NoRuntime.into());
    }
    let session = || format!("opening the lock session of thread `{thread_id}`");
    let (client, mut connection) = within(saver.deadline, session, &saver.target, async {
        saver
            .pg
            .connect(saver.tls.connector.clone())
            .await
            .map_err(|e| {
                Failure::from(crate::tls::connect_failure(
                    &saver.target,
                    saver.tls.mode,
                    &e,
                ))
            })
    })
    .await?;
    // A holder whose machine vanishes (rather than its process dying, which closes the
    // connection at once) is noticed by the server within about a minute, not hours.
    within(
        saver.deadline,
        session,
        &saver.target,
        drive(
            &mut connection,
            client.batch_execute(
                "SET tcp_keepalives_idle = 30; SET tcp_keepalives_interval = 10;
                 SET tcp_keepalives_count = 3",
            ),
        ),
    )
    .await?;
    let key = lock_key(&saver.schema, thread_id);
    let started = Instant::now();
    loop {
        let row = within(
            saver.deadline,
            || format!("asking for the lock of thread `{thread_id}`"),
            &saver.target,
            drive(
                &mut connection,
                client.query_one("SELECT pg_try_advisory_lock($1)", &[&key]),
            ),
        )
        .await?;
        if row.try_get::<_, bool>(0)? {
            return Ok(ThreadLock::new(
                thread_id,
                Session {
                    _client: client,
                    _connection: std::sync::Mutex::new(connection),
                },
            ));
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
