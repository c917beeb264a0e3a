//! Node caching: a node whose inputs did not change since its last run on a thread is
//! not called again; its recorded writes are reused.
//!
//! Give a node a [`CachePolicy`] with [`StateGraph::cache`](crate::StateGraph::cache)
//! and the graph a store with [`CompileOptions::cache`](crate::CompileOptions::cache)
//! ([`InMemoryCache`], or a durable saver such as `stategraph_sqlite::SqliteSaver`,
//! which keeps the entries beside its checkpoints).
//!
//! # What counts as unchanged
//!
//! A node taking the state reads the channels listed in `#[node(reads(..))]` (every
//! channel when it declares none). When it runs, the cache records, for each channel
//! it read, the channel's version and a digest of its value. The next time the node is
//! scheduled on the thread, it is served from the cache when every channel it reads
//! still has the recorded value: the same version, or a newer version holding an equal
//! value (a write of the same value does not make a node stale). A node does not go
//! stale from its own writes: a channel it read and then was the only one to write in
//! that step is recorded with its value after the step, so an accumulator that reads
//! and writes the same channel is not re-run for that reason alone.
//!
//! A `Send` target is keyed by a digest of its payload instead: one entry per
//! distinct payload, so a fan-out re-run with the same items reuses each item's
//! result.
//!
//! Reused writes go through the reducers exactly as if the node had returned them, are
//! saved as the task's pending writes, and are marked `cached` in the stream's
//! `updates` and task events and in the run history
//! ([`TaskRecord::cached`](crate::checkpoint::TaskRecord::cached)).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::checkpoint::{PendingWrite, SaverResult};
use crate::future::BoxFuture;

/// How a node's results are reused.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CachePolicy {
    pub(crate) ttl: Option<Duration>,
}

impl CachePolicy {
    /// Reuse the node's last writes while its inputs are unchanged, with no expiry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Entries older than `ttl` are not reused (the node runs and records afresh).
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// The expiry, if any.
    pub fn time_to_live(&self) -> Option<Duration> {
        self.ttl
    }
}

/// Names one cache entry.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CacheKey {
    /// The thread (empty for runs without one).
    pub thread_id: String,
    /// The node.
    pub node: String,
    /// For a `Send` target, the SHA-256 (hex) of its encoded payload; empty for a node
    /// taking the state (one entry: its last run).
    pub input: String,
}

/// What a channel held when a node read it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeenChannel {
    /// The channel's version.
    pub version: u64,
    /// SHA-256 (hex) of the channel's encoded value.
    pub digest: String,
}

/// A recorded run of a node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CacheEntry {
    /// The channels the node read, by name (empty for a `Send` target).
    pub reads: BTreeMap<String, SeenChannel>,
    /// The node's writes (its updates, gotos and sends), encoded.
    pub writes: Vec<PendingWrite>,
    /// When the run was recorded, in milliseconds since the Unix epoch.
    pub created_ms: u64,
    /// When the entry stops being reused, if it expires.
    pub expires_ms: Option<u64>,
}

/// Where cache entries are kept.
///
/// Object-safe, like [`CheckpointSaver`](crate::checkpoint::CheckpointSaver), so a
/// compiled graph holds any store as `Arc<dyn NodeCache>`.
pub trait NodeCache: Send + Sync + 'static {
    /// The entry under `key`, if any.
    fn get<'a>(&'a self, key: &'a CacheKey) -> BoxFuture<'a, SaverResult<Option<CacheEntry>>>;

    /// Stores `entry` under `key`, replacing what was there.
    fn put<'a>(&'a self, key: &'a CacheKey, entry: CacheEntry) -> BoxFuture<'a, SaverResult<()>>;

    /// Removes the thread's entries (only `node`'s when given); returns how many were
    /// removed.
    fn clear<'a>(
        &'a self,
        thread_id: &'a str,
        node: Option<&'a str>,
    ) -> BoxFuture<'a, SaverResult<usize>>;
}

/// Keeps cache entries in memory. Everything is lost when the process ends; a durable
/// saver keeps them across processes.
#[derive(Default)]
pub struct InMemoryCache {
    entries: Mutex<HashMap<CacheKey, CacheEntry>>,
}

impl InMemoryCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<CacheKey, CacheEntry>> {
        // No code panics while holding the lock, so a poisoned map is still consistent.
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Number of entries (for tests and diagnostics).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether the cache holds no entry.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }
}

impl NodeCache for InMemoryCache {
    fn get<'a>(&'a self, key: &'a CacheKey) -> BoxFuture<'a, SaverResult<Option<CacheEntry>>> {
        Box::pin(async move { Ok(self.lock().get(key).cloned()) })
    }

    fn put<'a>(&'a self, key: &'a CacheKey, entry: CacheEntry) -> BoxFuture<'a, SaverResult<()>> {
        Box::pin(async move {
            self.lock().insert(key.clone(), entry);
            Ok(())
        })
    }

    fn clear<'a>(
        &'a self,
        thread_id: &'a str,
        node: Option<&'a str>,
    ) -> BoxFuture<'a, SaverResult<usize>> {
        Box::pin(async move {
            let mut entries = self.lock();
            let before = entries.len();
            entries.retain(|k, _| !(k.thread_id == thread_id && node.is_none_or(|n| k.node == n)));
            Ok(before - entries.len())
        })
    }
}

/// Whether a node would run or be served from its cache, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Staleness {
    /// The node.
    pub node: String,
    /// Whether the next run would call it (no entry, an expired entry, or changed
    /// inputs).
    pub stale: bool,
    /// Whether a run of it is recorded on the thread.
    pub recorded: bool,
    /// Whether the recorded entry has expired.
    pub expired: bool,
    /// The channels it reads whose values changed since its recorded run.
    pub changed: Vec<ChannelChange>,
}

/// A channel whose value changed since a node read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChannelChange {
    /// The channel.
    pub channel: String,
    /// Its version when the node read it.
    pub seen_version: u64,
    /// Its version now.
    pub current_version: u64,
}

/// SHA-256 (hex) of a JSON value's compact encoding.
pub(crate) fn digest(value: &serde_json::Value) -> String {
    let bytes = serde_json::to_vec(value).unwrap_or_default();
    let hash = Sha256::digest(&bytes);
    let mut out = String::with_capacity(64);
    for b in hash {
        for nibble in [b >> 4, b & 0xf] {
            out.push(char::from_digit(u32::from(nibble), 16).unwrap_or('0'));
        }
    }
    out
}

/// The cache's clock, in milliseconds since the Unix epoch: the wall clock read once,
/// advanced by Tokio's monotonic clock (so paused time in tests moves it too).
pub(crate) fn now_ms() -> u64 {
    static BASE: OnceLock<(u64, tokio::time::Instant)> = OnceLock::new();
    let (wall, at) = *BASE.get_or_init(|| {
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        (wall, tokio::time::Instant::now())
    });
    let elapsed = u64::try_from(at.elapsed().as_millis()).unwrap_or(u64::MAX);
    wall.saturating_add(elapsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_is_stable_and_distinguishes_values() {
        let a = digest(&serde_json::json!({"b": 1, "a": [1, 2]}));
        assert_eq!(a.len(), 64);
        assert_eq!(a, digest(&serde_json::json!({"a": [1, 2], "b": 1})));
        assert_ne!(a, digest(&serde_json::json!({"a": [1, 2], "b": 2})));
    }

    #[tokio::test]
    async fn clear_removes_only_the_named_thread_and_node() {
        let cache = InMemoryCache::new();
        let entry = CacheEntry {
            reads: BTreeMap::new(),
            writes: Vec::new(),
            created_ms: 0,
            expires_ms: None,
        };
        for (t, n) in [("t1", "a"), ("t1", "b"), ("t2", "a")] {
            let key = CacheKey {
                thread_id: t.into(),
                node: n.into(),
                input: String::new(),
            };
            cache.put(&key, entry.clone()).await.unwrap();
        }
        assert_eq!(cache.clear("t1", Some("a")).await.unwrap(), 1);
        assert_eq!(cache.len(), 2);
        assert_eq!(cache.clear("t1", None).await.unwrap(), 1);
        assert_eq!(cache.len(), 1);
        assert_eq!(cache.clear("t3", None).await.unwrap(), 0);
    }
}
