//! `InMemorySaver`: checkpoints in a process-local map. For tests and development
//! only: nothing survives the process.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard};

use super::by_id::ById;
use super::error::SaverResult;
use super::lock::{LocalThreadLocks, ThreadLock};
use super::saver::CheckpointSaver;
use super::types::{
    Checkpoint, CheckpointConfig, CheckpointMetadata, CheckpointTuple, ListOptions, PendingWrite,
    SaveOp, StoredValue, ThreadInfo,
};
use crate::future::BoxFuture;

#[derive(Clone)]
struct Entry {
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    parent: Option<String>,
}

/// A pending write as stored: the task id and index are its key.
#[derive(Clone)]
struct StoredWrite {
    channel: String,
    value: serde_json::Value,
}

#[derive(Clone, Default)]
struct Namespace {
    // Boxed: an entry is a few hundred bytes, and the vector moves its entries
    // whenever it grows.
    checkpoints: ById<Box<Entry>>,
    writes: ById<BTreeMap<(String, u32), StoredWrite>>,
    /// Stored channel values by channel, then version. (Nested rather than keyed by
    /// `(channel, version)`: a search then compares the channel name once, not at
    /// every key it passes.)
    values: BTreeMap<String, BTreeMap<u64, StoredValue>>,
}

type Threads = HashMap<String, BTreeMap<String, Namespace>>;

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
    threads: Mutex<Threads>,
    locks: LocalThreadLocks,
}

impl InMemorySaver {
    /// An empty saver.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Threads> {
        // No code panics while holding the lock, so a poisoned map is still consistent.
        self.threads.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Number of stored checkpoints across all threads (for tests and diagnostics).
    pub fn checkpoint_count(&self) -> usize {
        self.lock()
            .values()
            .flat_map(|t| t.values())
            .map(|ns| ns.checkpoints.len())
            .sum()
    }

    /// Bytes of stored channel values across all threads, as compact JSON.
    pub fn stored_value_bytes(&self) -> usize {
        self.lock()
            .values()
            .flat_map(|t| t.values())
            .flat_map(|ns| ns.values.values().flat_map(BTreeMap::values))
            .map(|v| serde_json::to_vec(v).map_or(0, |b| b.len()))
            .sum()
    }
}

/// The namespace of `thread_id`, created when absent.
fn namespace(threads: &mut Threads, thread_id: String, checkpoint_ns: String) -> &mut Namespace {
    threads
        .entry(thread_id)
        .or_default()
        .entry(checkpoint_ns)
        .or_default()
}

/// Stores a checkpoint. Its versioned channel values move to the namespace's values
/// (where a restore looks them up by version); the checkpoint keeps their names with
/// a placeholder, filled in again when it is read ([`tuple`]), so each value is held
/// once. A value with no version stays in the checkpoint.
fn store_checkpoint(ns: &mut Namespace, mut entry: Box<Entry>) {
    let checkpoint = &mut entry.checkpoint;
    for (channel, value) in &mut checkpoint.channel_values {
        let Some(&version) = checkpoint.channel_versions.get(channel) else {
            continue;
        };
        // The name is copied only for a channel's first stored value.
        let versions = match ns.values.get_mut(channel) {
            Some(versions) => versions,
            None => ns.values.entry(channel.clone()).or_default(),
        };
        versions.insert(version, std::mem::replace(value, PLACEHOLDER));
    }
    ns.checkpoints.insert(checkpoint.id.clone(), entry);
}

/// What a stored checkpoint holds in place of a value kept in the namespace's values.
const PLACEHOLDER: StoredValue = StoredValue::Full(serde_json::Value::Null);

/// A stored checkpoint with its channel values filled in from the namespace.
fn checkpoint_of(ns: &Namespace, stored: &Checkpoint) -> Checkpoint {
    let mut checkpoint = stored.clone();
    for (channel, value) in &mut checkpoint.channel_values {
        let found = checkpoint
            .channel_versions
            .get(channel)
            .and_then(|version| ns.values.get(channel)?.get(version));
        if let Some(found) = found {
            value.clone_from(found);
        }
    }
    checkpoint
}

/// Idempotent per (task id, index): a task's own write already stored is kept; a
/// special write (`__`: errors, interrupts) replaces the stored one.
fn store_writes(ns: &mut Namespace, checkpoint_id: Option<String>, writes: Vec<PendingWrite>) {
    let slot = ns.writes.get_or_default(checkpoint_id.unwrap_or_default());
    for w in writes {
        let special = w.is_runtime_record();
        let key = (w.task_id, w.idx);
        let write = StoredWrite {
            channel: w.channel,
            value: w.value,
        };
        if special {
            slot.insert(key, write);
        } else {
            slot.entry(key).or_insert(write);
        }
    }
}

/// One save of a batch, apart from the namespace it goes to.
enum Stored {
    Checkpoint(Box<Entry>),
    /// The checkpoint the writes follow, and the writes.
    Writes(Option<String>, Vec<PendingWrite>),
}

impl Stored {
    /// The save's thread and namespace, and what it stores.
    fn split(op: SaveOp) -> ((String, String), Self) {
        match op {
            SaveOp::Checkpoint {
                config,
                checkpoint,
                metadata,
            } => (
                (config.thread_id, config.checkpoint_ns),
                Self::Checkpoint(Box::new(Entry {
                    checkpoint,
                    metadata,
                    parent: config.checkpoint_id,
                })),
            ),
            SaveOp::Writes { config, writes } => (
                (config.thread_id, config.checkpoint_ns),
                Self::Writes(config.checkpoint_id, writes),
            ),
        }
    }

    fn store(self, ns: &mut Namespace) {
        match self {
            Self::Checkpoint(entry) => store_checkpoint(ns, entry),
            Self::Writes(checkpoint_id, writes) => store_writes(ns, checkpoint_id, writes),
        }
    }
}

/// Stores one save (`put`, `put_writes`); `put_batch` groups saves by namespace.
fn store_one(threads: &mut Threads, op: SaveOp) {
    let ((thread_id, checkpoint_ns), stored) = Stored::split(op);
    stored.store(namespace(threads, thread_id, checkpoint_ns));
}

fn tuple(config: &CheckpointConfig, ns: &Namespace, id: &str, e: &Entry) -> CheckpointTuple {
    let at = |id: &str| CheckpointConfig {
        thread_id: config.thread_id.clone(),
        checkpoint_ns: config.checkpoint_ns.clone(),
        checkpoint_id: Some(id.to_string()),
    };
    CheckpointTuple {
        config: at(id),
        checkpoint: checkpoint_of(ns, &e.checkpoint),
        metadata: e.metadata.clone(),
        parent_config: e.parent.as_deref().map(at),
        pending_writes: ns
            .writes
            .get(id)
            .map(|w| {
                w.iter()
                    .map(|((task_id, idx), write)| PendingWrite {
                        task_id: task_id.clone(),
                        idx: *idx,
                        channel: write.channel.clone(),
                        value: write.value.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default(),
    }
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
            let threads = self.lock();
            let Some(ns) = threads
                .get(&config.thread_id)
                .and_then(|t| t.get(&config.checkpoint_ns))
            else {
                return Ok(None);
            };
            let found = match &config.checkpoint_id {
                Some(id) => ns.checkpoints.get_key_value(id),
                None => ns.checkpoints.last_key_value(),
            };
            Ok(found.map(|(id, e)| tuple(config, ns, id, e)))
        })
    }

    fn list<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        options: &'a ListOptions,
    ) -> BoxFuture<'a, SaverResult<Vec<CheckpointTuple>>> {
        Box::pin(async move {
            let threads = self.lock();
            let Some(ns) = threads
                .get(&config.thread_id)
                .and_then(|t| t.get(&config.checkpoint_ns))
            else {
                return Ok(Vec::new());
            };
            let older = match &options.before {
                Some(before) => ns.checkpoints.before(before),
                None => &ns.checkpoints.entries,
            };
            Ok(older
                .iter()
                .rev()
                .filter(|(_, e)| e.metadata.matches(&options.filter))
                .take(options.limit.unwrap_or(usize::MAX))
                .map(|(id, e)| tuple(config, ns, id, e))
                .collect())
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
            store_one(
                &mut self.lock(),
                SaveOp::Checkpoint {
                    config: config.clone(),
                    checkpoint,
                    metadata,
                },
            );
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
            store_one(&mut self.lock(), SaveOp::Writes { config, writes });
            Ok(())
        })
    }

    fn put_batch<'a>(&'a self, ops: Vec<SaveOp>) -> BoxFuture<'a, SaverResult<()>> {
        Box::pin(async move {
            let mut threads = self.lock();
            let mut ops = ops.into_iter().map(Stored::split).peekable();
            // A batch is usually one run's saves: the namespace is looked up once per
            // run of consecutive saves to it, not once per save.
            while let Some((key, first)) = ops.next() {
                let ns = namespace(&mut threads, key.0.clone(), key.1.clone());
                first.store(ns);
                while let Some((_, stored)) = ops.next_if(|(k, _)| *k == key) {
                    stored.store(ns);
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
            let threads = self.lock();
            let Some(ns) = threads
                .get(&config.thread_id)
                .and_then(|t| t.get(&config.checkpoint_ns))
            else {
                return Ok(Vec::new());
            };
            if from > to {
                return Ok(Vec::new());
            }
            Ok(ns
                .values
                .get(channel)
                .map(|versions| {
                    versions
                        .range(from..=to)
                        .map(|(v, value)| (*v, value.clone()))
                        .collect()
                })
                .unwrap_or_default())
        })
    }

    fn max_version<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        channel: &'a str,
    ) -> BoxFuture<'a, SaverResult<Option<u64>>> {
        Box::pin(async move {
            let threads = self.lock();
            Ok(threads
                .get(&config.thread_id)
                .and_then(|t| t.get(&config.checkpoint_ns))
                .and_then(|ns| ns.values.get(channel))
                .and_then(|versions| versions.last_key_value())
                .map(|(v, _)| *v))
        })
    }

    fn list_threads(&self) -> BoxFuture<'_, SaverResult<Vec<ThreadInfo>>> {
        Box::pin(async move {
            let threads = self.lock();
            let mut out: Vec<ThreadInfo> = threads
                .iter()
                .filter_map(|(thread_id, namespaces)| {
                    // The newest of the first namespace (the root's, when it has
                    // checkpoints): the order of different namespaces' checkpoints is
                    // not recorded.
                    let (id, latest) = namespaces
                        .values()
                        .find_map(|ns| ns.checkpoints.last_key_value())?;
                    Some(ThreadInfo {
                        thread_id: thread_id.clone(),
                        checkpoint_count: namespaces
                            .values()
                            .map(|ns| ns.checkpoints.len() as u64)
                            .sum(),
                        latest_checkpoint_id: id.clone(),
                        latest_step: latest.metadata.step,
                        latest_ts: latest.checkpoint.ts.clone(),
                    })
                })
                .collect();
            out.sort_by(|a, b| a.thread_id.cmp(&b.thread_id));
            Ok(out)
        })
    }

    fn list_namespaces<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, SaverResult<Vec<String>>> {
        Box::pin(async move {
            let threads = self.lock();
            let mut out: Vec<String> = threads
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
            self.lock().remove(thread_id);
            Ok(())
        })
    }

    fn copy_thread<'a>(&'a self, from: &'a str, to: &'a str) -> BoxFuture<'a, SaverResult<()>> {
        Box::pin(async move {
            let mut threads = self.lock();
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
            let mut threads = self.lock();
            let Some(thread) = threads.get_mut(thread_id) else {
                return Ok(());
            };
            for ns in thread.values_mut() {
                let drop_count = ns.checkpoints.len().saturating_sub(keep);
                // The oldest come first; one pass each, however many are dropped.
                let dropped: std::collections::HashSet<String> =
                    ns.checkpoints.drain_first(drop_count).into_iter().collect();
                ns.writes.retain(|id| !dropped.contains(id));
                let needed: Vec<(String, u64, u64)> = ns
                    .checkpoints
                    .values()
                    .flat_map(|e| needed_ranges(&e.checkpoint))
                    .collect();
                for (channel, versions) in &mut ns.values {
                    versions.retain(|version, _| {
                        needed
                            .iter()
                            .any(|(c, from, to)| c == channel && (*from..=*to).contains(version))
                    });
                }
                ns.values.retain(|_, versions| !versions.is_empty());
            }
            Ok(())
        })
    }
}

/// The value versions a restore of `checkpoint` reads: per channel, the inclusive
/// range from its base version to its current version.
pub fn needed_ranges(checkpoint: &Checkpoint) -> Vec<(String, u64, u64)> {
    checkpoint
        .channel_versions
        .iter()
        .map(|(channel, &version)| {
            let base = checkpoint
                .channel_bases
                .get(channel)
                .copied()
                .unwrap_or(version);
            (channel.clone(), base.min(version), version)
        })
        .collect()
}

/// The (channel, version) values a restore of `checkpoint` reads, one by one. Ranges
/// can be huge in a corrupted checkpoint; prefer [`needed_ranges`].
pub fn needed_values(checkpoint: &Checkpoint) -> Vec<(String, u64)> {
    needed_ranges(checkpoint)
        .into_iter()
        .flat_map(|(channel, from, to)| {
            // Bounded: a real thread never has this many versions of one channel.
            (from..=to).take(1 << 20).map(move |v| (channel.clone(), v))
        })
        .collect()
}
