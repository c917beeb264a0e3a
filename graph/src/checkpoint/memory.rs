//! `InMemorySaver`: checkpoints in a process-local map. For tests and development
//! only: nothing survives the process.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use super::compact::{Damaged, Names};
use super::error::{CheckpointError, SaverResult};
use super::lock::{LocalThreadLocks, ThreadLock};
use super::namespace::{Namespace, PLACEHOLDER, Stored, Threads, fill_values, namespace};
use super::needed::needed_ranges;
use super::packed::PackedEntry;
use super::record::{Place, checkpoint_what, value_what};
use super::saver::CheckpointSaver;
use super::types::{
    Checkpoint, CheckpointConfig, CheckpointMetadata, CheckpointTuple, ListOptions, PendingWrite,
    SaveOp, StoredValue, ThreadInfo,
};
use crate::future::BoxFuture;

/// Everything the saver holds, behind its one lock.
#[derive(Default)]
struct Store {
    threads: Threads,
    /// The channel and node names of every stored record (shared by all threads).
    names: Names,
    /// Where a record is encoded before it is copied into a buffer of its exact size.
    scratch: Vec<u8>,
}

/// Keeps checkpoints in memory. For tests and development only: everything is lost
/// when the process ends. Use a durable saver (SQLite, PostgreSQL) for real threads.
///
/// ```
/// use std::sync::Arc;
/// use stategraph::prelude::*;
///
/// #[derive(GraphState, Clone, Debug, Default)]
/// struct Visits {
///     #[reducer(add)]
///     n: u32,
/// }
///
/// #[node]
/// fn visit(_: &Visits) -> VisitsUpdate {
///     Visits::update().n(1)
/// }
///
/// let saver = Arc::new(InMemorySaver::new());
/// let graph = StateGraph::<Visits>::new()
///     .add_node(visit)
///     .add_edge(START, visit)
///     .compile_with(CompileOptions::new().shared_checkpointer(saver.clone()))?;
///
/// // Threads are independent; each keeps accumulating across runs.
/// let (alice, bob) = (RunConfig::new().thread("alice"), RunConfig::new().thread("bob"));
/// graph.invoke_blocking(Visits::update(), &alice)?;
/// graph.invoke_blocking(Visits::update(), &alice)?;
/// let out = graph.invoke_blocking(Visits::update(), &bob)?;
/// assert_eq!(out.values.n, 1);
/// assert_eq!(graph.invoke_blocking(None, &alice)?.values.n, 2); // nothing left to run
///
/// // Each run saved its input and one step.
/// assert_eq!(saver.checkpoint_count(), 6);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Default)]
pub struct InMemorySaver {
    store: Mutex<Store>,
    locks: LocalThreadLocks,
}

impl InMemorySaver {
    /// An empty saver.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Store> {
        // No code panics while holding the lock, so a poisoned map is still consistent.
        self.store.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Number of stored checkpoints across all threads (for tests and diagnostics).
    pub fn checkpoint_count(&self) -> usize {
        self.lock()
            .threads
            .values()
            .flat_map(|t| t.values())
            .map(|ns| ns.checkpoints.len())
            .sum()
    }

    /// Bytes of stored channel values across all threads, as compact JSON.
    pub fn stored_value_bytes(&self) -> usize {
        let store = self.lock();
        store
            .threads
            .values()
            .flat_map(|t| t.values())
            .flat_map(|ns| ns.values.values().flat_map(BTreeMap::values))
            .filter_map(|v| v.get(&store.names).ok())
            .map(|v| serde_json::to_vec(&v).map_or(0, |b| b.len()))
            .sum()
    }
}

/// The error for a stored record that does not read back (a bug in this saver).
fn damaged(config: &CheckpointConfig, id: &str) -> CheckpointError {
    unreadable(checkpoint_what(id, Place::of(config)))
}

fn unreadable(what: String) -> CheckpointError {
    CheckpointError::Invalid {
        what,
        reason: "the in-memory saver cannot read back what it stored (a bug in stategraph: please report it)".into(),
    }
}

fn tuple(
    names: &Names,
    config: &CheckpointConfig,
    ns: &Namespace,
    id: &str,
    e: &PackedEntry,
) -> SaverResult<CheckpointTuple> {
    let at = |id: &str| CheckpointConfig {
        thread_id: config.thread_id.clone(),
        checkpoint_ns: config.checkpoint_ns.clone(),
        checkpoint_id: Some(id.to_string()),
    };
    let (mut checkpoint, metadata, parent) = e
        .unpack(names, id, |_, _| PLACEHOLDER)
        .map_err(|Damaged| damaged(config, id))?;
    fill_values(names, ns, &mut checkpoint).map_err(|Damaged| damaged(config, id))?;
    let pending_writes = ns
        .writes
        .get(id)
        .map(|w| w.iter().map(|w| w.unpack(names)).collect::<Result<_, _>>())
        .transpose()
        .map_err(|Damaged| damaged(config, id))?
        .unwrap_or_default();
    Ok(CheckpointTuple {
        config: at(id),
        checkpoint,
        metadata,
        parent_config: parent.as_deref().map(at),
        pending_writes,
    })
}

impl CheckpointSaver for InMemorySaver {
    /// Two runs of one thread in this process never interleave (the saver is not shared
    /// with other processes).
    fn lock_thread<'a>(
        &'a self,
        thread_id: &'a str,
        wait: std::time::Duration,
    ) -> BoxFuture<'a, SaverResult<ThreadLock>> {
        Box::pin(self.locks.lock(thread_id, wait))
    }

    fn get_tuple<'a>(
        &'a self,
        config: &'a CheckpointConfig,
    ) -> BoxFuture<'a, SaverResult<Option<CheckpointTuple>>> {
        Box::pin(async move {
            let store = self.lock();
            let Some(ns) = store
                .threads
                .get(&config.thread_id)
                .and_then(|t| t.get(&config.checkpoint_ns))
            else {
                return Ok(None);
            };
            let found = match &config.checkpoint_id {
                Some(id) => ns.checkpoints.get_key_value(id),
                None => ns.checkpoints.last_key_value(),
            };
            found
                .map(|(id, e)| tuple(&store.names, config, ns, id, e))
                .transpose()
        })
    }

    fn list<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        options: &'a ListOptions,
    ) -> BoxFuture<'a, SaverResult<Vec<CheckpointTuple>>> {
        Box::pin(async move {
            let store = self.lock();
            let Some(ns) = store
                .threads
                .get(&config.thread_id)
                .and_then(|t| t.get(&config.checkpoint_ns))
            else {
                return Ok(Vec::new());
            };
            let older = match &options.before {
                Some(before) => ns.checkpoints.before(before),
                None => &ns.checkpoints.entries,
            };
            let limit = options.limit.unwrap_or(usize::MAX);
            let mut out = Vec::new();
            for (id, e) in older.iter().rev() {
                if out.len() >= limit {
                    break;
                }
                let t = tuple(&store.names, config, ns, id, e)?;
                if t.metadata.matches(&options.filter) {
                    out.push(t);
                }
            }
            Ok(out)
        })
    }

    fn put<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
    ) -> BoxFuture<'a, SaverResult<CheckpointConfig>> {
        Box::pin(async move {
            let id = checkpoint.id.clone();
            self.put_batch(vec![SaveOp::Checkpoint {
                config: config.clone(),
                checkpoint,
                metadata,
            }])
            .await?;
            Ok(CheckpointConfig {
                thread_id: config.thread_id.clone(),
                checkpoint_ns: config.checkpoint_ns.clone(),
                checkpoint_id: Some(id),
            })
        })
    }

    fn put_writes<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        writes: Vec<PendingWrite>,
    ) -> BoxFuture<'a, SaverResult<()>> {
        Box::pin(async move {
            let config = config.clone();
            self.put_batch(vec![SaveOp::Writes { config, writes }])
                .await
        })
    }

    /// Storing is copying into memory: nothing to batch.
    fn saves_inline(&self) -> bool {
        true
    }

    fn put_batch<'a>(&'a self, ops: Vec<SaveOp>) -> BoxFuture<'a, SaverResult<()>> {
        Box::pin(async move {
            let mut store = self.lock();
            let Store {
                threads,
                names,
                scratch,
            } = &mut *store;
            let mut ops = ops.into_iter().map(Stored::split).peekable();
            // A batch is usually one run's saves: the namespace is looked up once per
            // run of consecutive saves to it, not once per save.
            while let Some((key, first)) = ops.next() {
                if ops.peek().is_none_or(|(k, _)| *k != key) {
                    // A save on its own (an inline `Async` save): its names move in.
                    first.store(namespace(threads, key.0, key.1), names, scratch);
                    continue;
                }
                let ns = namespace(threads, key.0.clone(), key.1.clone());
                first.store(ns, names, scratch);
                while let Some((_, stored)) = ops.next_if(|(k, _)| *k == key) {
                    stored.store(ns, names, scratch);
                }
            }
            Ok(())
        })
    }

    fn channel_history<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        channel: &'a str,
        from: u64,
        to: u64,
    ) -> BoxFuture<'a, SaverResult<Vec<(u64, StoredValue)>>> {
        Box::pin(async move {
            let store = self.lock();
            let Some(ns) = store
                .threads
                .get(&config.thread_id)
                .and_then(|t| t.get(&config.checkpoint_ns))
            else {
                return Ok(Vec::new());
            };
            if from > to {
                return Ok(Vec::new());
            }
            let Some(versions) = ns.values.get(channel) else {
                return Ok(Vec::new());
            };
            versions
                .range(from..=to)
                .map(|(v, value)| match value.get(&store.names) {
                    Ok(value) => Ok((*v, value)),
                    Err(Damaged) => Err(unreadable(value_what(channel, *v, Place::of(config)))),
                })
                .collect()
        })
    }

    fn max_version<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        channel: &'a str,
    ) -> BoxFuture<'a, SaverResult<Option<u64>>> {
        Box::pin(async move {
            let store = self.lock();
            Ok(store
                .threads
                .get(&config.thread_id)
                .and_then(|t| t.get(&config.checkpoint_ns))
                .and_then(|ns| ns.values.get(channel))
                .and_then(|versions| versions.last_key_value())
                .map(|(v, _)| *v))
        })
    }

    fn list_threads(&self) -> BoxFuture<'_, SaverResult<Vec<ThreadInfo>>> {
        Box::pin(async move {
            let store = self.lock();
            let mut out = Vec::new();
            for (thread_id, namespaces) in &store.threads {
                // The newest of the first namespace (the root's, when it has
                // checkpoints): the order of different namespaces' checkpoints is
                // not recorded.
                let Some((ns_name, (id, latest))) = namespaces
                    .iter()
                    .find_map(|(name, ns)| Some((name, ns.checkpoints.last_key_value()?)))
                else {
                    continue;
                };
                let config = CheckpointConfig {
                    thread_id: thread_id.clone(),
                    checkpoint_ns: ns_name.clone(),
                    checkpoint_id: None,
                };
                let (checkpoint, metadata, _) = latest
                    .unpack(&store.names, id, |_, _| PLACEHOLDER)
                    .map_err(|Damaged| damaged(&config, id))?;
                out.push(ThreadInfo {
                    thread_id: thread_id.clone(),
                    checkpoint_count: namespaces
                        .values()
                        .map(|ns| ns.checkpoints.len() as u64)
                        .sum(),
                    latest_checkpoint_id: id.clone(),
                    latest_step: metadata.step,
                    latest_ts: checkpoint.ts,
                });
            }
            out.sort_by(|a, b| a.thread_id.cmp(&b.thread_id));
            Ok(out)
        })
    }

    fn list_namespaces<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, SaverResult<Vec<String>>> {
        Box::pin(async move {
            let store = self.lock();
            let mut out: Vec<String> = store
                .threads
                .get(thread_id)
                .map(|namespaces| {
                    namespaces
                        .iter()
                        .filter(|(_, ns)| ns.checkpoints.last_key_value().is_some())
                        .map(|(name, _)| name.clone())
                        .collect()
                })
                .unwrap_or_default();
            out.sort();
            Ok(out)
        })
    }

    fn delete_thread<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, SaverResult<()>> {
        Box::pin(async move {
            self.lock().threads.remove(thread_id);
            Ok(())
        })
    }

    fn copy_thread<'a>(&'a self, from: &'a str, to: &'a str) -> BoxFuture<'a, SaverResult<()>> {
        Box::pin(async move {
            let threads = &mut self.lock().threads;
            match threads.get(from).cloned() {
                Some(copy) => {
                    threads.insert(to.to_string(), copy);
                }
                None => {
                    threads.remove(to);
                }
            }
            Ok(())
        })
    }

    fn prune<'a>(&'a self, thread_id: &'a str, keep: usize) -> BoxFuture<'a, SaverResult<()>> {
        Box::pin(async move {
            let mut store = self.lock();
            let Store { threads, names, .. } = &mut *store;
            let Some(thread) = threads.get_mut(thread_id) else {
                return Ok(());
            };
            for (ns_name, ns) in thread.iter_mut() {
                let drop_count = ns.checkpoints.len().saturating_sub(keep);
                // The oldest come first; one pass each, however many are dropped.
                let dropped: std::collections::HashSet<String> =
                    ns.checkpoints.drain_first(drop_count).into_iter().collect();
                ns.writes.retain(|id| !dropped.contains(id));
                let mut needed: Vec<(String, u64, u64)> = Vec::new();
                for (id, e) in &ns.checkpoints.entries {
                    // Versions and bases only: the values are not filled in.
                    let checkpoint = e.checkpoint(names, id, |_, _| PLACEHOLDER);
                    let checkpoint = checkpoint.map_err(|Damaged| {
                        let config = CheckpointConfig {
                            thread_id: thread_id.to_string(),
                            checkpoint_ns: ns_name.clone(),
                            checkpoint_id: None,
                        };
                        damaged(&config, id)
                    })?;
                    needed.extend(needed_ranges(&checkpoint));
                }
                for (channel, versions) in &mut ns.values {
                    versions.retain(|version, _| {
                        needed
                            .iter()
                            .any(|(c, from, to)| c == channel && (*from..=*to).contains(version))
                    });
                }
                ns.values.retain(|_, versions| !versions.is_empty());
                ns.long.sweep();
            }
            Ok(())
        })
    }
}
