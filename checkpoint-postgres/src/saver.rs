//! `PostgresSaver`: each operation on a pooled connection.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::Pool;
use stategraph::BoxFuture;
use stategraph::cache::{CacheEntry, CacheKey, NodeCache};
use stategraph::checkpoint::{
    Checkpoint, CheckpointConfig, CheckpointMetadata, CheckpointSaver, CheckpointTuple,
    ListOptions, PendingWrite, SaveOp, SaverResult, StoredValue, ThreadInfo, ThreadLock,
};

use crate::error::Failure;
use crate::lock::Locks;
use crate::options::PostgresOptions;
use crate::save::Save;
use crate::tls::SslMode;
use crate::{cache, store, threads};

/// A durable [`CheckpointSaver`] in a PostgreSQL database, shared by any number of
/// processes on any number of machines.
///
/// Each operation is one transaction on a connection of the saver's pool (reads see
/// one snapshot). A save (`put`, `put_writes`, `put_batch`) waits for the server
/// once: it is one statement (prepared once per connection), an insert per table and
/// the check of the fences of the threads this process holds. Clones share the pool. The saver is async-native: use it inside a
/// tokio runtime with its I/O and time drivers (`#[tokio::main]`, or
/// `invoke_blocking`).
///
/// A run holds its thread with a session-level advisory lock (see
/// [`CheckpointSaver::lock_thread`]); the locks of all the saver's runs share one
/// connection of their own, the lock session. Another process running the same thread
/// waits for it, and if the holder dies its session ends and the lock goes with it.
/// So the saver holds at most [`pool_size`](PostgresOptions::pool_size) + 1
/// connections, however many threads run (one of the pool's own connections, when
/// built with [`from_pool`](PostgresSaver::from_pool)).
#[derive(Clone)]
pub struct PostgresSaver {
    pub(crate) pool: Pool,
    /// The `sslmode` of the saver's own pool (`None` for a user's pool).
    pub(crate) ssl_mode: Option<SslMode>,
    /// The lock session and the locks held on it.
    pub(crate) locks: Arc<Locks>,
    pub(crate) options: PostgresOptions,
    pub(crate) target: String,
    /// The schema holding the tables (part of each thread's lock key).
    pub(crate) schema: String,
    /// The deadline of each network step: the URL's `connect_timeout`, else the
    /// options'.
    pub(crate) deadline: Duration,
}

impl fmt::Debug for PostgresSaver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresSaver")
            .field("target", &self.target)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl PostgresSaver {
    /// Stores what `plan` adds to a save of `threads` in one transaction (one round
    /// trip to the server): with a check, run by the server in the same transaction,
    /// that the locks this process holds on them are held still.
    async fn save<'t, T>(
        &self,
        operation: &'static str,
        threads: impl IntoIterator<Item = &'t String>,
        plan: impl FnOnce(&mut Save) -> Result<T, Failure>,
    ) -> SaverResult<T> {
        let mut save = Save::default();
        let mut checked: Vec<&str> = Vec::new();
        for thread in threads {
            if !checked.contains(&thread.as_str()) {
                let held = self
                    .locks
                    .held(&self.schema, thread)
                    .map_err(|f| f.during(operation))?;
                if let Some((held, fence)) = held {
                    save.check_lock(thread, held, &fence);
                }
                checked.push(thread);
            }
        }
        let out = plan(&mut save).map_err(|f| f.during(operation))?;
        let client = self.op_client(operation).await?;
        save.run(&self.locks, &client)
            .await
            .map_err(|f| f.during(operation))?;
        Ok(out)
    }
}

impl CheckpointSaver for PostgresSaver {
    fn get_tuple<'a>(
        &'a self,
        config: &'a CheckpointConfig,
    ) -> BoxFuture<'a, SaverResult<Option<CheckpointTuple>>> {
        Box::pin(async move {
            let mut client = self.op_client("get_tuple").await?;
            store::get_tuple(&mut client, self.options.max_record_bytes, config)
                .await
                .map_err(|f| f.during("get_tuple"))
        })
    }

    fn list<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        options: &'a ListOptions,
    ) -> BoxFuture<'a, SaverResult<Vec<CheckpointTuple>>> {
        Box::pin(async move {
            let mut client = self.op_client("list").await?;
            store::list(&mut client, self.options.max_record_bytes, config, options)
                .await
                .map_err(|f| f.during("list"))
        })
    }

    fn put<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
    ) -> BoxFuture<'a, SaverResult<CheckpointConfig>> {
        Box::pin(self.save("put", [&config.thread_id], move |save| {
            save.checkpoint(self.options.max_record_bytes, config, checkpoint, &metadata)
        }))
    }

    /// Stores every op in one transaction, all or nothing, in one round trip to the
    /// server once the connection has prepared the statements.
    fn put_batch<'a>(&'a self, ops: Vec<SaveOp>) -> BoxFuture<'a, SaverResult<()>> {
        Box::pin(async move {
            let threads: Vec<String> = ops
                .iter()
                .map(|op| match op {
                    SaveOp::Checkpoint { config, .. } | SaveOp::Writes { config, .. } => {
                        config.thread_id.clone()
                    }
                })
                .collect();
            let limit = self.options.max_record_bytes;
            self.save("put_batch", &threads, |save| {
                for op in ops {
                    match op {
                        SaveOp::Checkpoint {
                            config,
                            checkpoint,
                            metadata,
                        } => {
                            save.checkpoint(limit, &config, checkpoint, &metadata)?;
                        }
                        SaveOp::Writes { config, writes } => {
                            save.writes(limit, &config, &writes)?
                        }
                    }
                }
                Ok(())
            })
            .await
        })
    }

    fn put_writes<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        writes: Vec<PendingWrite>,
    ) -> BoxFuture<'a, SaverResult<()>> {
        Box::pin(self.save("put_writes", [&config.thread_id], move |save| {
            save.writes(self.options.max_record_bytes, config, &writes)
        }))
    }

    fn channel_history<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        channel: &'a str,
        from: u64,
        to: u64,
    ) -> BoxFuture<'a, SaverResult<Vec<(u64, StoredValue)>>> {
        Box::pin(async move {
            let mut client = self.op_client("channel_history").await?;
            store::channel_history(
                &mut client,
                self.options.max_record_bytes,
                config,
                channel,
                from,
                to,
            )
            .await
            .map_err(|f| f.during("channel_history"))
        })
    }

    fn max_version<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        channel: &'a str,
    ) -> BoxFuture<'a, SaverResult<Option<u64>>> {
        Box::pin(async move {
            let mut client = self.op_client("max_version").await?;
            store::max_version(&mut client, config, channel)
                .await
                .map_err(|f| f.during("max_version"))
        })
    }

    fn list_threads(&self) -> BoxFuture<'_, SaverResult<Vec<ThreadInfo>>> {
        Box::pin(async move {
            let mut client = self.op_client("list_threads").await?;
            threads::list_threads(&mut client, self.options.max_record_bytes)
                .await
                .map_err(|f| f.during("list_threads"))
        })
    }

    fn list_namespaces<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, SaverResult<Vec<String>>> {
        Box::pin(async move {
            let mut client = self.op_client("list_namespaces").await?;
            threads::list_namespaces(&mut client, thread_id)
                .await
                .map_err(|f| f.during("list_namespaces"))
        })
    }

    fn delete_thread<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, SaverResult<()>> {
        Box::pin(async move {
            let mut client = self.op_client("delete_thread").await?;
            let key = crate::lock::lock_key(&self.schema, thread_id);
            threads::delete_thread(&mut client, thread_id, key)
                .await
                .map_err(|f| f.during("delete_thread"))
        })
    }

    fn copy_thread<'a>(&'a self, from: &'a str, to: &'a str) -> BoxFuture<'a, SaverResult<()>> {
        Box::pin(async move {
            let mut client = self.op_client("copy_thread").await?;
            threads::copy_thread(&mut client, from, to)
                .await
                .map_err(|f| f.during("copy_thread"))
        })
    }

    /// A session-level advisory lock (`pg_try_advisory_lock`) on a 64-bit hash of the
    /// schema and thread id, held on the saver's lock session — one connection outside
    /// the pool that holds the locks of all the saver's runs — and tried again every
    /// [poll interval](PostgresOptions::lock_poll_interval) until `wait` has passed.
    /// The server releases it when the guard is dropped or the holding process dies
    /// (or, through TCP keepalives, within about a minute of its machine becoming
    /// unreachable). If the lock session ends while a run holds its thread, the run's
    /// next save fails with [`PostgresError::LockLost`](crate::PostgresError::LockLost)
    /// rather than write a thread another process may have taken.
    fn lock_thread<'a>(
        &'a self,
        thread_id: &'a str,
        wait: Duration,
    ) -> BoxFuture<'a, SaverResult<ThreadLock>> {
        Box::pin(
            self.locks
                .lock(&self.schema, thread_id, wait, self.options.lock_poll),
        )
    }

    fn prune<'a>(&'a self, thread_id: &'a str, keep: usize) -> BoxFuture<'a, SaverResult<()>> {
        Box::pin(async move {
            let mut client = self.op_client("prune").await?;
            threads::prune(&mut client, self.options.max_record_bytes, thread_id, keep)
                .await
                .map_err(|f| f.during("prune"))
        })
    }
}

/// Cache entries live in the same database, in `stategraph_cache`, so every worker
/// reuses the nodes' recorded runs; `delete_thread` removes a thread's entries too.
impl NodeCache for PostgresSaver {
    fn get<'a>(&'a self, key: &'a CacheKey) -> BoxFuture<'a, SaverResult<Option<CacheEntry>>> {
        Box::pin(async move {
            let mut client = self.op_client("cache get").await?;
            cache::cache_get(&mut client, self.options.max_record_bytes, key)
                .await
                .map_err(|f| f.during("cache get"))
        })
    }

    fn put<'a>(&'a self, key: &'a CacheKey, entry: CacheEntry) -> BoxFuture<'a, SaverResult<()>> {
        Box::pin(async move {
            let mut client = self.op_client("cache put").await?;
            cache::cache_put(&mut client, self.options.max_record_bytes, key, &entry)
                .await
                .map_err(|f| f.during("cache put"))
        })
    }

    fn clear<'a>(
        &'a self,
        thread_id: &'a str,
        node: Option<&'a str>,
    ) -> BoxFuture<'a, SaverResult<usize>> {
        Box::pin(async move {
            let mut client = self.op_client("cache clear").await?;
            cache::cache_clear(&mut client, thread_id, node)
                .await
                .map_err(|f| f.during("cache clear"))
        })
    }
}
