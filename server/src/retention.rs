//! Thread retention: a thread's time to live ([`ThreadTtl`], the server's default,
//! or a thread's own `ttl`), counted from its last change, after which a sweeper
//! deletes it or keeps only its latest checkpoint; and pruning threads on request.
//!
//! Every process with workers sweeps: it claims a bounded batch of expired idle
//! threads (each held for a while, so two processes never sweep one thread at once,
//! and one that dies mid-sweep leaves it to the next), sweeps them, and looks again.
//! A thread that changed after it was claimed is left alone.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::app::App;
use crate::db::{ThreadStatus, Ttl, now_ms};
use crate::error::ApiError;

/// How often an idle sweeper looks for expired threads.
const SWEEP_EVERY: Duration = Duration::from_secs(1);
/// Most threads one pass sweeps.
const BATCH: usize = 100;
/// How long a claimed thread is held by its sweeper.
const HOLD: Duration = Duration::from_secs(60);
/// How long a sweep or prune waits for a run writing the thread.
const LOCK_WAIT: Duration = Duration::from_millis(200);

/// What happens to a thread whose time to live is over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TtlStrategy {
    /// The thread goes, with its runs, checkpoints and crons.
    Delete,
    /// The thread stays with its latest checkpoint (and what that one needs); older
    /// checkpoints and their writes go.
    KeepLatest,
}

/// A time to live for threads without their own: [`Server::thread_ttl`].
///
/// ```
/// use std::time::Duration;
/// use stategraph_server::{Server, ThreadTtl};
///
/// // Threads untouched for 30 days keep only their latest state.
/// let server = Server::new().thread_ttl(ThreadTtl::keep_latest_after(Duration::from_secs(30 * 86_400)));
/// # drop(server);
/// ```
///
/// [`Server::thread_ttl`]: crate::Server::thread_ttl
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadTtl {
    after: Duration,
    strategy: TtlStrategy,
}

impl ThreadTtl {
    /// Threads are deleted `after` their last change.
    pub fn delete_after(after: Duration) -> Self {
        Self {
            after,
            strategy: TtlStrategy::Delete,
        }
    }

    /// Threads keep only their latest checkpoint `after` their last change.
    pub fn keep_latest_after(after: Duration) -> Self {
        Self {
            after,
            strategy: TtlStrategy::KeepLatest,
        }
    }

    /// How the tables store it.
    pub(crate) fn stored(self) -> Ttl {
        Ttl {
            after_ms: i64::try_from(self.after.as_millis()).unwrap_or(i64::MAX),
            keep_latest: self.strategy == TtlStrategy::KeepLatest,
        }
    }
}

/// Sweeps expired threads until `stop` turns true.
pub(crate) async fn sweep_threads(app: Arc<App>, mut stop: watch::Receiver<bool>) {
    loop {
        let swept = sweep_once(&app).await;
        let wait = if swept == BATCH {
            Duration::ZERO
        } else {
            SWEEP_EVERY
        };
        tokio::select! {
            _ = stop.changed() => return,
            () = tokio::time::sleep(wait) => {}
        }
    }
}

/// One pass: claims and sweeps a batch; how many threads it claimed.
pub(crate) async fn sweep_once(app: &App) -> usize {
    let now = now_ms();
    let hold = now.saturating_add(i64::try_from(HOLD.as_millis()).unwrap_or(i64::MAX));
    let expired = match app
        .db
        .claim_expired(now, app.limits.thread_ttl, hold, BATCH)
        .await
    {
        Ok(expired) => expired,
        Err(e) => {
            tracing::warn!(error = %e, "claiming expired threads failed; retrying");
            return 0;
        }
    };
    for e in &expired {
        // The thread's writer lock, as a run takes it: no run writes it meanwhile.
        // One busy now is left to its hold's end.
        let Ok(_writer) = app.saver.lock_thread(&e.thread_id, LOCK_WAIT).await else {
            continue;
        };
        let unchanged = app
            .db
            .get_thread(e.thread_id.clone())
            .await
            .ok()
            .flatten()
            .is_some_and(|t| t.updated_at == e.updated_at && t.status != ThreadStatus::Busy);
        if !unchanged {
            continue;
        }
        let swept = if e.keep_latest {
            match app.saver.prune(&e.thread_id, 1).await {
                Ok(()) => app.db.mark_swept(e.thread_id.clone(), e.updated_at).await,
                Err(err) => {
                    tracing::warn!(thread_id = %e.thread_id, error = %err, "pruning an expired thread failed");
                    Ok(())
                }
            }
        } else {
            // The rows first, only if nothing changed since the claim; then the
            // checkpoints of a thread that is gone.
            match app
                .db
                .delete_if_unchanged(e.thread_id.clone(), e.updated_at)
                .await
            {
                Ok(true) => app
                    .saver
                    .delete_thread(&e.thread_id)
                    .await
                    .map_err(|err| crate::db::DbError::Task(err.to_string())),
                other => other.map(|_| ()),
            }
        };
        if let Err(err) = swept {
            tracing::warn!(thread_id = %e.thread_id, error = %err, "sweeping an expired thread failed");
        }
    }
    expired.len()
}

/// Prunes a thread on request: deletes it, or keeps its latest checkpoint; whether
/// it was pruned (an unknown or busy thread is not).
pub(crate) async fn prune_thread(
    app: &App,
    thread_id: &str,
    keep_latest: bool,
) -> Result<bool, ApiError> {
    let Some(t) = app.db.get_thread(thread_id.to_string()).await? else {
        return Ok(false);
    };
    if t.status == ThreadStatus::Busy {
        return Ok(false);
    }
    let Ok(_writer) = app.saver.lock_thread(thread_id, LOCK_WAIT).await else {
        return Ok(false);
    };
    if keep_latest {
        app.saver
            .prune(thread_id, 1)
            .await
            .map_err(ApiError::internal)?;
        return Ok(true);
    }
    if !app
        .db
        .delete_if_unchanged(thread_id.to_string(), t.updated_at)
        .await?
    {
        return Ok(false);
    }
    app.saver
        .delete_thread(thread_id)
        .await
        .map_err(ApiError::internal)?;
    Ok(true)
}
