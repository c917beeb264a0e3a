//! The `CheckpointSaver` trait every storage backend implements.

use std::time::Duration;

use super::error::SaverResult;
use super::lock::ThreadLock;
use super::types::{
    Checkpoint, CheckpointConfig, CheckpointMetadata, CheckpointTuple, ListOptions, PendingWrite,
    SaveOp, StoredValue, ThreadInfo,
};
use crate::future::BoxFuture;

/// Storage for checkpoints, pending writes and channel values, per thread.
///
/// Object-safe (methods return boxed futures) so a compiled graph can hold any saver
/// as `Arc<dyn CheckpointSaver>`.
///
/// A thread's checkpoints are ordered as they were stored (per namespace): the latest
/// is the last one `put`, whatever its id. Ids come from clocks, and the clocks of
/// two processes (or one stepped back) disagree, so a saver must never order
/// checkpoints by id; the SQL savers keep a per-thread sequence number assigned at
/// `put`, under the thread lock the runtime holds while writing. Every implementation should pass the conformance
/// suite in the `stategraph-tests` package.
pub trait CheckpointSaver: Send + Sync + 'static {
    /// The checkpoint named by `config`, or the thread's latest (the last stored) when
    /// it names none;
    /// `None` for an unknown thread or id.
    fn get_tuple<'a>(
        &'a self,
        config: &'a CheckpointConfig,
    ) -> BoxFuture<'a, SaverResult<Option<CheckpointTuple>>>;

    /// The thread's checkpoints, newest (last stored) first, filtered by `options`.
    fn list<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        options: &'a ListOptions,
    ) -> BoxFuture<'a, SaverResult<Vec<CheckpointTuple>>>;

    /// Stores a checkpoint (and the channel values it carries) as the child of the
    /// checkpoint named by `config`, as the thread's latest; returns the config naming
    /// the new checkpoint. Storing an id that is already stored replaces it in place
    /// (it keeps its position in the order).
    fn put<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
    ) -> BoxFuture<'a, SaverResult<CheckpointConfig>>;

    /// Stores writes of a task of the step following the checkpoint `config` names.
    /// Idempotent per (task id, index): a task's own write already stored is kept as
    /// it is; a special write (channel starting with `__`: errors, interrupts) replaces
    /// the stored one, so the latest error or interrupt of a task is what is kept.
    fn put_writes<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        writes: Vec<PendingWrite>,
    ) -> BoxFuture<'a, SaverResult<()>>;

    /// Applies `ops` in order, as the matching `put` and `put_writes` calls would.
    /// The runtime batches background saves (`Durability::Async`) this way; a saver
    /// should override it to store the whole batch in one transaction.
    fn put_batch<'a>(&'a self, ops: Vec<SaveOp>) -> BoxFuture<'a, SaverResult<()>> {
        Box::pin(async move {
            for op in ops {
                match op {
                    SaveOp::Checkpoint {
                        config,
                        checkpoint,
                        metadata,
                    } => {
                        self.put(&config, checkpoint, metadata).await?;
                    }
                    SaveOp::Writes { config, writes } => self.put_writes(&config, writes).await?,
                }
            }
            Ok(())
        })
    }

    /// Whether a save is over as soon as it is called: it does no I/O and never
    /// waits, so batching saves in the background gains nothing. With
    /// `Durability::Async` a run then stores each save as it makes it, instead of
    /// keeping the save's parts alive in a queue until a background batch (which
    /// costs a saver like [`InMemorySaver`](super::InMemorySaver) more than the save
    /// itself). `false` unless a saver says otherwise.
    fn saves_inline(&self) -> bool {
        false
    }

    /// The stored values of `channel` at versions `from..=to`, in version order.
    fn channel_history<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        channel: &'a str,
        from: u64,
        to: u64,
    ) -> BoxFuture<'a, SaverResult<Vec<(u64, StoredValue)>>>;

    /// The highest version of `channel` stored in the thread (any branch), if any.
    /// Savers should override this with a query that reads no values.
    fn max_version<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        channel: &'a str,
    ) -> BoxFuture<'a, SaverResult<Option<u64>>> {
        Box::pin(async move {
            let all = self.channel_history(config, channel, 0, u64::MAX).await?;
            Ok(all.last().map(|(v, _)| *v))
        })
    }

    /// Every thread with at least one checkpoint, ordered by thread id (byte order):
    /// its checkpoint count and its newest checkpoint. Reads no channel values, so
    /// tools can list a store's threads cheaply.
    fn list_threads(&self) -> BoxFuture<'_, SaverResult<Vec<ThreadInfo>>>;

    /// The namespaces of the thread that hold checkpoints, sorted: `""` for the root
    /// graph, then subgraphs' paths (`node:task`, nested levels joined by `|`). Empty
    /// for an unknown thread.
    fn list_namespaces<'a>(&'a self, thread_id: &'a str)
    -> BoxFuture<'a, SaverResult<Vec<String>>>;

    /// Removes every checkpoint, write and value of the thread; a no-op for an unknown
    /// thread.
    fn delete_thread<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, SaverResult<()>>;

    /// Copies a thread's whole history to another thread id (replacing it).
    fn copy_thread<'a>(&'a self, from: &'a str, to: &'a str) -> BoxFuture<'a, SaverResult<()>>;

    /// Keeps the `keep` newest checkpoints of the thread (per namespace) and removes the
    /// rest with their writes; values the kept checkpoints still need are kept.
    fn prune<'a>(&'a self, thread_id: &'a str, keep: usize) -> BoxFuture<'a, SaverResult<()>>;

    /// Makes the caller the thread's only writer until the returned guard is dropped,
    /// waiting up to `wait` for a current holder — in this process or, for a saver
    /// shared between processes, in any process using the same storage. A holder that
    /// dies releases the thread. Runs take it for as long as they write; reads take
    /// none.
    ///
    /// # Errors
    /// [`CheckpointError::ThreadBusy`](super::CheckpointError::ThreadBusy) when the thread is still held after `wait`, or a
    /// storage failure.
    fn lock_thread<'a>(
        &'a self,
        thread_id: &'a str,
        wait: Duration,
    ) -> BoxFuture<'a, SaverResult<ThreadLock>>;
}
