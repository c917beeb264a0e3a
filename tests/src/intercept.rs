//! A saver that lets a test see (and hold back) every write the runtime makes, and
//! passes everything to an in-memory saver.

use std::time::Duration;

use stategraph::BoxFuture;
use stategraph::checkpoint::{
    Checkpoint, CheckpointConfig, CheckpointMetadata, CheckpointSaver, CheckpointTuple,
    InMemorySaver, ListOptions, PendingWrite, SaveOp, SaverResult, StoredValue, ThreadInfo,
    ThreadLock,
};

/// One write, as the runtime handed it to the saver.
#[derive(Debug)]
pub enum Write<'a> {
    /// A `put`.
    Put {
        /// Where it goes (the parent checkpoint's id, if any).
        config: &'a CheckpointConfig,
        /// The checkpoint.
        checkpoint: &'a Checkpoint,
        /// Its metadata.
        metadata: &'a CheckpointMetadata,
    },
    /// A `put_writes`.
    PutWrites {
        /// The checkpoint the writes follow.
        config: &'a CheckpointConfig,
        /// The writes.
        writes: &'a [PendingWrite],
    },
    /// A `put_batch`.
    Batch(&'a [SaveOp]),
}

/// What a test does with each write before it is stored.
pub trait OnWrite: Send + Sync + 'static {
    /// Called before `write` reaches the inner saver; the write waits for it.
    fn before<'a>(&'a self, write: Write<'a>) -> BoxFuture<'a, ()>;
}

/// An [`InMemorySaver`] behind an [`OnWrite`] hook.
pub struct Intercepted<H> {
    /// Where everything is stored.
    pub inner: InMemorySaver,
    /// The test's hook.
    pub hook: H,
}

impl<H: OnWrite> Intercepted<H> {
    /// A new, empty saver calling `hook` on every write.
    pub fn new(hook: H) -> Self {
        Self {
            inner: InMemorySaver::new(),
            hook,
        }
    }
}

impl<H: OnWrite> CheckpointSaver for Intercepted<H> {
    fn put<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
    ) -> BoxFuture<'a, SaverResult<CheckpointConfig>> {
        Box::pin(async move {
            let write = Write::Put {
                config,
                checkpoint: &checkpoint,
                metadata: &metadata,
            };
            self.hook.before(write).await;
            self.inner.put(config, checkpoint, metadata).await
        })
    }
    fn put_writes<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        writes: Vec<PendingWrite>,
    ) -> BoxFuture<'a, SaverResult<()>> {
        Box::pin(async move {
            let write = Write::PutWrites {
                config,
                writes: &writes,
            };
            self.hook.before(write).await;
            self.inner.put_writes(config, writes).await
        })
    }
    fn put_batch<'a>(&'a self, ops: Vec<SaveOp>) -> BoxFuture<'a, SaverResult<()>> {
        Box::pin(async move {
            self.hook.before(Write::Batch(&ops)).await;
            self.inner.put_batch(ops).await
        })
    }
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
        self.inner.delete_thread(thread_id)
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
        wait: Duration,
    ) -> BoxFuture<'a, SaverResult<ThreadLock>> {
        self.inner.lock_thread(thread_id, wait)
    }
}
