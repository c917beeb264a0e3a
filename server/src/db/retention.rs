//! Thread retention: each thread's time to live (its own, else the server's
//! default), counted from its last change, and the claim of expired threads by the
//! sweeper of whichever process gets to them first. A claim holds a thread for a
//! while (`sweep_hold`); a thread kept with its latest checkpoint is marked swept
//! at the change it was swept for (`swept_at`), so it is swept again only after it
//! changes and expires again.

use stategraph::BoxFuture;

use super::rows::DbResult;

/// A time to live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ttl {
    /// Milliseconds after the thread's last change.
    pub(crate) after_ms: i64,
    /// Keep the thread and its latest checkpoint (else delete it).
    pub(crate) keep_latest: bool,
}

impl Ttl {
    /// The stored name of its strategy.
    pub(crate) fn strategy(self) -> &'static str {
        if self.keep_latest {
            "keep_latest"
        } else {
            "delete"
        }
    }
}

/// A thread whose time is over, claimed for sweeping.
#[derive(Clone, Debug)]
pub(crate) struct Expired {
    pub(crate) thread_id: String,
    pub(crate) keep_latest: bool,
    /// Its last change, as claimed: it is swept only if nothing changed since.
    pub(crate) updated_at: i64,
}

/// Times to live and the sweep of expired threads.
pub(crate) trait Retention: Send + Sync + 'static {
    /// Sets (or, with `None`, removes) a thread's own time to live; whether the
    /// thread exists.
    fn set_thread_ttl(&self, thread_id: String, ttl: Option<Ttl>) -> BoxFuture<'_, DbResult<bool>>;
    /// A thread's own time to live.
    fn thread_ttl(&self, thread_id: String) -> BoxFuture<'_, DbResult<Option<Ttl>>>;
    /// Claims up to `limit` idle threads whose time to live (their own, else
    /// `default`) is over at `now` and that were not swept since their last change,
    /// each held until `hold_until`.
    fn claim_expired(
        &self,
        now: i64,
        default: Option<Ttl>,
        hold_until: i64,
        limit: usize,
    ) -> BoxFuture<'_, DbResult<Vec<Expired>>>;
    /// Deletes the thread with its runs, events and crons if it is idle and has not
    /// changed since `updated_at`; whether it did.
    fn delete_if_unchanged(
        &self,
        thread_id: String,
        updated_at: i64,
    ) -> BoxFuture<'_, DbResult<bool>>;
    /// Marks a thread kept with its latest checkpoint as swept for `updated_at`.
    fn mark_swept(&self, thread_id: String, updated_at: i64) -> BoxFuture<'_, DbResult<()>>;
}

/// The strategy stored under `name`.
pub(crate) fn keeps_latest(name: Option<&str>) -> bool {
    name == Some("keep_latest")
}
