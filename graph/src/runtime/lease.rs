//! A run's lease: how long the run may go on writing, for hosts that hand runs to
//! workers that can stall (a paused process, a frozen machine). A run given one
//! checks it before each superstep and each save, so a worker that wakes up after
//! its lease lapsed — when another worker may have taken the run over — neither
//! starts a step nor saves one.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::checkpoint::{
    Checkpoint, CheckpointConfig, CheckpointError, CheckpointMetadata, CheckpointSaver,
    CheckpointTuple, ListOptions, PendingWrite, SaveOp, SaverResult, StoredValue, ThreadInfo,
    ThreadLock,
};
use crate::future::BoxFuture;

/// How long a run may go on: a deadline its holder moves forward while it keeps its
/// claim (see [`RunConfig::lease`](crate::RunConfig::lease)). Clones share the
/// deadline.
///
/// ```
/// use std::time::{Duration, Instant};
/// use stategraph::RunLease;
///
/// let lease = RunLease::until(Instant::now() + Duration::from_secs(30));
/// assert!(lease.is_held());
/// lease.expire(); // the claim is gone: the run stops before its next step or save
/// assert!(!lease.is_held());
/// ```
#[derive(Clone, Debug)]
pub struct RunLease {
    deadline: Arc<Mutex<Instant>>,
}

impl RunLease {
    /// A lease held until `deadline`.
    pub fn until(deadline: Instant) -> Self {
        Self {
            deadline: Arc::new(Mutex::new(deadline)),
        }
    }

    /// Holds it until `deadline` (after a renewal). Take the deadline from when the
    /// renewal was *asked for*, not when it was answered: then it never outlasts the
    /// claim the renewal made.
    pub fn extend(&self, deadline: Instant) {
        *self.lock() = deadline;
    }

    /// Ends it now.
    pub fn expire(&self) {
        *self.lock() = Instant::now();
    }

    /// When it runs out.
    pub fn deadline(&self) -> Instant {
        *self.lock()
    }

    /// Whether it has not run out yet.
    pub fn is_held(&self) -> bool {
        Instant::now() < self.deadline()
    }

    /// `Ok` while held; the error a run stops with once it is not.
    pub(crate) fn check(&self, thread_id: &str) -> SaverResult<()> {
        let now = Instant::now();
        let deadline = self.deadline();
        if now < deadline {
            return Ok(());
        }
        Err(CheckpointError::LeaseLapsed {
            thread_id: thread_id.to_string(),
            lapsed: now.saturating_duration_since(deadline),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Instant> {
        // Nothing panics while holding it, so a poisoned deadline is still valid.
        self.deadline.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A saver whose writes are refused once the run's lease lapsed; reads and locks
/// pass through.
pub(super) struct LeasedSaver {
    pub(super) inner: Arc<dyn CheckpointSaver>,
    pub(super) lease: RunLease,
}

impl LeasedSaver {
    fn check_op(&self, op: &SaveOp) -> SaverResult<()> {
        let config = match op {
            SaveOp::Checkpoint { config, .. } | SaveOp::Writes { config, .. } => config,
        };
        self.lease.check(&config.thread_id)
    }
}

impl CheckpointSaver for LeasedSaver {
    fn get_tuple<'a>(
        &'a self,
        config: &'a CheckpointConfig,
    ) -> BoxFuture<'a, SaverResult<Option<CheckpointTuple>>> {
        self.inner.get_tuple(config)
    }

    fn list<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        options: &'a ListOptions,
    ) -> BoxFuture<'a, SaverResult<Vec<CheckpointTuple>>> {
        self.inner.list(config, options)
    }

    fn put<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
    ) -> BoxFuture<'a, SaverResult<CheckpointConfig>> {
        match self.lease.check(&config.thread_id) {
            Ok(()) => self.inner.put(config, checkpoint, metadata),
            Err(e) => Box::pin(async move { Err(e) }),
        }
    }

    fn put_writes<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        writes: Vec<PendingWrite>,
    ) -> BoxFuture<'a, SaverResult<()>> {
        match self.lease.check(&config.thread_id) {
            Ok(()) => self.inner.put_writes(config, writes),
            Err(e) => Box::pin(async move { Err(e) }),
        }
    }

    fn put_batch<'a>(&'a self, ops: Vec<SaveOp>) -> BoxFuture<'a, SaverResult<()>> {
        match ops.iter().try_for_each(|op| self.check_op(op)) {
            Ok(()) => self.inner.put_batch(ops),
            Err(e) => Box::pin(async move { Err(e) }),
        }
    }

    fn saves_inline(&self) -> bool {
        self.inner.saves_inline()
    }

    fn channel_history<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        channel: &'a str,
        from: u64,
        to: u64,
    ) -> BoxFuture<'a, SaverResult<Vec<(u64, StoredValue)>>> {
        self.inner.channel_history(config, channel, from, to)
    }

    fn max_version<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        channel: &'a str,
    ) -> BoxFuture<'a, SaverResult<Option<u64>>> {
        self.inner.max_version(config, channel)
    }

    fn list_threads(&self) -> BoxFuture<'_, SaverResult<Vec<ThreadInfo>>> {
        self.inner.list_threads()
    }

    fn list_namespaces<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, SaverResult<Vec<String>>> {
        self.inner.list_namespaces(thread_id)
    }

    fn delete_thread<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, SaverResult<()>> {
        match self.lease.check(thread_id) {
            Ok(()) => self.inner.delete_thread(thread_id),
            Err(e) => Box::pin(async move { Err(e) }),
        }
    }

    fn copy_thread<'a>(&'a self, from: &'a str, to: &'a str) -> BoxFuture<'a, SaverResult<()>> {
        self.inner.copy_thread(from, to)
    }

    fn prune<'a>(&'a self, thread_id: &'a str, keep: usize) -> BoxFuture<'a, SaverResult<()>> {
        self.inner.prune(thread_id, keep)
    }

    fn lock_thread<'a>(
        &'a self,
        thread_id: &'a str,
        wait: std::time::Duration,
    ) -> BoxFuture<'a, SaverResult<ThreadLock>> {
        self.inner.lock_thread(thread_id, wait)
    }
}
