//! The runtime's side of node caching: looking tasks up before a step runs, and
//! recording cache-enabled tasks once the step's writes are applied.

use std::collections::{BTreeMap, BTreeSet};

use super::config::RunConfig;
use super::error::{ContinueReason, RunError};
use super::frontier::Task;
use super::persist::{self, Versions};
use super::runner::Known;
use crate::cache::{
    CacheEntry, CacheKey, ChannelChange, NodeCache, SeenChannel, Staleness, digest, now_ms,
};
use crate::checkpoint::{CheckpointError, PendingWrite};
use crate::compile::{CompiledGraph, CompiledNode, Graph};
use crate::node::{NodeOutput, NodeRef};
use crate::state::{GraphState, Write};

/// A cache-enabled task of the step being run.
pub(crate) struct Probe {
    key: CacheKey,
    /// What the channels it reads hold before the step.
    seen: BTreeMap<String, SeenChannel>,
    /// The entry it was served from, if it was.
    hit: Option<CacheEntry>,
    /// The node's cache expiry.
    ttl: Option<std::time::Duration>,
}

impl Probe {
    pub(crate) fn is_hit(&self) -> bool {
        self.hit.is_some()
    }
}

/// What `node` reads of `state`, by channel name.
fn seen_channels<S: GraphState>(
    node: &CompiledNode<S>,
    state: &S,
    versions: &Versions,
) -> Result<BTreeMap<String, SeenChannel>, RunError> {
    let mut seen = BTreeMap::new();
    for &index in &node.reads {
        let info = &S::CHANNELS[index];
        let encoded = state.encode_channel(index).map_err(|source| {
            RunError::Checkpoint(CheckpointError::Channel {
                id: format!("cache of `{}`", node.name),
                source,
            })
        })?;
        // An untracked channel has no encoding: the cache cannot see its changes.
        if let Some(value) = encoded {
            seen.insert(
                info.name.to_string(),
                SeenChannel {
                    version: versions.get(index).copied().unwrap_or(0),
                    digest: digest(&value),
                },
            );
        }
    }
    Ok(seen)
}

/// Whether `entry` may be reused for a task that reads `seen` now.
fn fresh(entry: &CacheEntry, seen: &BTreeMap<String, SeenChannel>, now: u64) -> bool {
    entry.expires_ms.is_none_or(|at| now < at)
        && entry.reads.len() == seen.len()
        && entry
            .reads
            .iter()
            .zip(seen)
            .all(|((a, x), (b, y))| a == b && x.digest == y.digest)
}

/// The thread as a step is about to run.
pub(crate) struct Current<'a, S> {
    pub(crate) thread: &'a str,
    pub(crate) state: &'a S,
    pub(crate) versions: &'a Versions,
}

/// Looks up every cache-enabled task that would otherwise run; a fresh entry turns
/// the task into `Known::Cached`. Returns a probe per task (`None`: not cached).
pub(crate) async fn lookup<S: GraphState>(
    g: &Graph<S>,
    store: &dyn NodeCache,
    current: Current<'_, S>,
    tasks: &[Task],
    known: &mut [Known<S>],
) -> Result<Vec<Option<Probe>>, RunError> {
    let Current {
        thread,
        state,
        versions,
    } = current;
    let now = now_ms();
    let mut probes = Vec::with_capacity(tasks.len());
    for (i, task) in tasks.iter().enumerate() {
        let node = &g.nodes[task.node];
        let (Some(policy), Some(Known::Run)) = (&node.cache, known.get(i)) else {
            probes.push(None);
            continue;
        };
        let (input, seen) = match &task.payload {
            Some(payload) => {
                let send = crate::node::Send::<S>::from_parts(node.name.clone(), payload.clone());
                // A payload that cannot be encoded cannot be keyed: the task just runs.
                let Ok(encoded) = persist::encode_payload(g, &send) else {
                    probes.push(None);
                    continue;
                };
                (digest(&encoded), BTreeMap::new())
            }
            None => (String::new(), seen_channels(node, state, versions)?),
        };
        let key = CacheKey {
            thread_id: thread.to_string(),
            node: node.name.to_string(),
            input,
        };
        let mut hit = None;
        if let Some(entry) = store.get(&key).await?
            && fresh(&entry, &seen, now)
        {
            let writes: Vec<&PendingWrite> = entry.writes.iter().collect();
            match persist::decode_output(g, thread, "(node cache)", &writes) {
                Ok(out) => {
                    known[i] = Known::Cached(out);
                    hit = Some(entry);
                }
                // An entry that no longer decodes (the state changed shape) is a miss.
                Err(e) => tracing::warn!(node = %node.name, error = %e, "ignoring cache entry"),
            }
        }
        probes.push(Some(Probe {
            key,
            seen,
            hit,
            ttl: policy.ttl,
        }));
    }
    Ok(probes)
}

/// A probed task's record, prepared before the step's writes are applied.
pub(crate) struct Pending {
    probe: Probe,
    writes: Vec<PendingWrite>,
    /// Channels it read and wrote: their digest with only its own writes applied.
    own: BTreeMap<String, (usize, String)>,
}

/// Encodes what each probed task wrote, and for the channels it both read and wrote,
/// the value its own writes alone produce from `state` (the pre-step state).
pub(crate) fn prepare<S: GraphState>(
    g: &Graph<S>,
    state: &S,
    tasks: &[Task],
    ids: &[String],
    outputs: &[NodeOutput<S>],
    probes: Vec<Option<Probe>>,
) -> Result<Vec<Pending>, RunError> {
    let mut out = Vec::new();
    for (i, probe) in probes.into_iter().enumerate() {
        let Some(probe) = probe else { continue };
        let (Some(task), Some(output)) = (tasks.get(i), outputs.get(i)) else {
            continue;
        };
        let node = &g.nodes[task.node];
        let writes = match &probe.hit {
            Some(entry) => entry.writes.clone(),
            None => persist::encode_output(g, &ids[i], output)?,
        };
        let written: BTreeSet<String> = writes
            .iter()
            .filter(|w| w.channel == persist::WRITE_UPDATE)
            .filter_map(|w| w.value.as_object())
            .flat_map(|o| o.keys().cloned())
            .collect();
        let both: Vec<usize> = node
            .reads
            .iter()
            .copied()
            .filter(|&c| written.contains(S::CHANNELS[c].name))
            .collect();
        let mut own = BTreeMap::new();
        // A `Send` target is keyed by its payload, not by what it reads.
        if task.payload.is_none() && !both.is_empty() {
            let mut view = state.clone();
            let mine = output
                .writes
                .iter()
                .cloned()
                .map(|u| Write::new(node.name.clone(), u))
                .collect();
            view.apply_writes(mine)
                .map_err(|source| RunError::InvalidUpdate { step: None, source })?;
            for c in both {
                if let Ok(Some(value)) = view.encode_channel(c) {
                    own.insert(S::CHANNELS[c].name.to_string(), (c, digest(&value)));
                }
            }
        }
        out.push(Pending { probe, writes, own });
    }
    Ok(out)
}

/// Stores the records once the step's writes are applied (`versions` are the
/// post-step versions).
pub(crate) async fn store(
    store: &dyn NodeCache,
    versions: &Versions,
    pending: Vec<Pending>,
) -> Result<(), RunError> {
    let now = now_ms();
    for Pending { probe, writes, own } in pending {
        let Probe {
            key,
            mut seen,
            hit,
            ttl,
        } = probe;
        // A node does not go stale from its own writes.
        for (name, (index, digest)) in own {
            seen.insert(
                name,
                SeenChannel {
                    version: versions.get(index).copied().unwrap_or(0),
                    digest,
                },
            );
        }
        let (created_ms, expires_ms) = match &hit {
            Some(entry) => (entry.created_ms, entry.expires_ms),
            None => (
                now,
                ttl.map(|t| now.saturating_add(u64::try_from(t.as_millis()).unwrap_or(u64::MAX))),
            ),
        };
        let entry = CacheEntry {
            reads: seen,
            writes,
            created_ms,
            expires_ms,
        };
        store.put(&key, entry).await?;
    }
    Ok(())
}

/// Whether `node` would be served from the cache on `thread`, given the thread's
/// current `state` and channel `versions` (by name).
pub(crate) async fn staleness<S: GraphState>(
    node: &CompiledNode<S>,
    store: &dyn NodeCache,
    thread: &str,
    state: &S,
    versions: &BTreeMap<String, u64>,
) -> Result<Staleness, RunError> {
    let by_index: Versions = S::CHANNELS
        .iter()
        .map(|c| versions.get(c.name).copied().unwrap_or(0))
        .collect();
    let seen = seen_channels(node, state, &by_index)?;
    let key = CacheKey {
        thread_id: thread.to_string(),
        node: node.name.to_string(),
        input: String::new(),
    };
    let entry = store.get(&key).await?;
    let now = now_ms();
    let Some(entry) = entry else {
        return Ok(Staleness {
            node: node.name.to_string(),
            stale: true,
            recorded: false,
            expired: false,
            changed: Vec::new(),
        });
    };
    let expired = entry.expires_ms.is_some_and(|at| now >= at);
    let changed: Vec<ChannelChange> = seen
        .iter()
        .filter(|(name, now)| {
            entry
                .reads
                .get(*name)
                .is_none_or(|then| then.digest != now.digest)
        })
        .map(|(name, now)| ChannelChange {
            channel: name.clone(),
            seen_version: entry.reads.get(name).map_or(0, |s| s.version),
            current_version: now.version,
        })
        .collect();
    Ok(Staleness {
        node: node.name.to_string(),
        stale: expired || !fresh(&entry, &seen, now),
        recorded: true,
        expired,
        changed,
    })
}

impl<S: GraphState> CompiledGraph<S> {
    fn cached_node(&self, node: &str) -> Result<(&dyn NodeCache, &CompiledNode<S>), RunError> {
        let store = self.graph.cache.as_deref().ok_or(RunError::NoCacheStore)?;
        let compiled = self
            .graph
            .index
            .get(node)
            .map(|&i| &self.graph.nodes[i])
            .filter(|n| n.cache.is_some())
            .ok_or_else(|| RunError::NotCached {
                node: node.to_string(),
            })?;
        Ok((store, compiled))
    }

    /// Whether `node` would run, or be served from its cache, if the thread's next
    /// run scheduled it now — and which of the channels it reads changed since its
    /// recorded run.
    ///
    /// # Errors
    /// No cache store, a node without a cache policy or a `Send` target, no
    /// checkpointer or thread id, or a checkpoint that fails to load.
    pub async fn staleness(
        &self,
        config: &RunConfig,
        node: impl NodeRef<S>,
    ) -> Result<Staleness, RunError> {
        let name = node.node_name();
        let (store, compiled) = self.cached_node(&name)?;
        if !compiled.takes_state {
            return Err(RunError::PayloadKeyedCache {
                node: name.to_string(),
            });
        }
        let thread = config
            .thread_id
            .as_deref()
            .ok_or(RunError::MissingThreadId)?;
        let latest = RunConfig {
            checkpoint_id: None,
            ..config.clone()
        };
        let (state, versions) = match self.get_state(&latest).await? {
            Some(snapshot) => {
                let saver = self
                    .graph
                    .saver
                    .as_deref()
                    .ok_or(RunError::NothingToContinue {
                        reason: ContinueReason::NoCheckpointer {
                            needed_by: "`staleness`",
                        },
                    })?;
                let versions = saver
                    .get_tuple(&snapshot.config)
                    .await?
                    .map(|t| t.checkpoint.channel_versions)
                    .unwrap_or_default();
                (snapshot.values, versions)
            }
            None => (S::default(), BTreeMap::new()),
        };
        staleness(compiled, store, thread, &state, &versions).await
    }

    /// Forgets every recorded run of `node` on the thread; returns how many entries
    /// were removed (a `Send` target has one per payload).
    ///
    /// # Errors
    /// No cache store, a node without a cache policy, no thread id, or the store
    /// failing.
    pub async fn clear_node_cache(
        &self,
        config: &RunConfig,
        node: impl NodeRef<S>,
    ) -> Result<usize, RunError> {
        let name = node.node_name();
        let (store, _) = self.cached_node(&name)?;
        let thread = config
            .thread_id
            .as_deref()
            .ok_or(RunError::MissingThreadId)?;
        Ok(store.clear(thread, Some(&name)).await?)
    }

    /// Forgets every recorded run of every node on the thread; returns how many entries
    /// were removed.
    ///
    /// # Errors
    /// No cache store, no thread id, or the store failing.
    pub async fn clear_cache(&self, config: &RunConfig) -> Result<usize, RunError> {
        let store = self.graph.cache.as_deref().ok_or(RunError::NoCacheStore)?;
        let thread = config
            .thread_id
            .as_deref()
            .ok_or(RunError::MissingThreadId)?;
        Ok(store.clear(thread, None).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(reads: &[(&str, u64, &str)], expires_ms: Option<u64>) -> CacheEntry {
        CacheEntry {
            reads: reads
                .iter()
                .map(|(n, v, d)| {
                    (
                        n.to_string(),
                        SeenChannel {
                            version: *v,
                            digest: d.to_string(),
                        },
                    )
                })
                .collect(),
            writes: Vec::new(),
            created_ms: 0,
            expires_ms,
        }
    }

    #[test]
    fn fresh_compares_digests_not_versions_and_honours_expiry() {
        let recorded = entry(&[("a", 1, "x"), ("b", 2, "y")], Some(100));
        let same_values_newer_versions = entry(&[("a", 5, "x"), ("b", 9, "y")], None).reads;
        assert!(fresh(&recorded, &same_values_newer_versions, 50));
        assert!(
            !fresh(&recorded, &same_values_newer_versions, 100),
            "expired"
        );
        let changed = entry(&[("a", 1, "x"), ("b", 3, "z")], None).reads;
        assert!(!fresh(&recorded, &changed, 50));
        let fewer = entry(&[("a", 1, "x")], None).reads;
        assert!(!fresh(&recorded, &fewer, 50));
    }
}
