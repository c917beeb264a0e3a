//! The reports each command produces, read from a saver. Each report serializes to
//! the command's `--json` output; the field names are part of the CLI's interface.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::Value;
use stategraph::checkpoint::{
    CheckpointConfig, CheckpointSaver, CheckpointTuple, ListOptions, ThreadInfo, channel_values,
};
use stategraph_studio::record::{parent_id, source_name};

use crate::error::CliError;
use crate::ids;
use crate::jsondiff::{self, PathChange};
use crate::writes::{self, ThreadStatus};

/// One thread in `threads`: the saver's summary and where the thread stands.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ThreadEntry {
    /// The saver's summary (id, checkpoint count, newest checkpoint).
    #[serde(flatten)]
    pub info: ThreadInfo,
    /// Judged from the newest checkpoint and its pending writes.
    pub status: ThreadStatus,
}

/// `threads`: every stored thread, ordered by id.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ThreadsReport {
    /// One entry per thread.
    pub threads: Vec<ThreadEntry>,
}

/// One checkpoint in a thread's history.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HistoryEntry {
    /// The checkpoint.
    pub checkpoint_id: String,
    /// The checkpoint it follows (`null` for the first).
    pub parent_id: Option<String>,
    /// When it was written (RFC 3339).
    pub ts: String,
    /// Why it was written: `input`, `loop`, `update` or `fork`.
    pub source: String,
    /// The superstep (-1 for the input).
    pub step: i64,
    /// Channels the step that wrote it changed.
    pub updated_channels: Vec<String>,
    /// Nodes planned for the next step.
    pub next: Vec<String>,
    /// How many writes of the next step's tasks are stored with it.
    pub pending_writes: usize,
}

/// `history`: a thread's checkpoints, newest first.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HistoryReport {
    /// The thread.
    pub thread_id: String,
    /// How many checkpoints it has (more than listed under `--limit`).
    pub total: u64,
    /// Its checkpoints, newest first.
    pub checkpoints: Vec<HistoryEntry>,
}

/// A task planned for the step after a checkpoint.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NextTask {
    /// The node.
    pub node: String,
    /// For a `Send` task, its payload.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
}

/// A write of a task of the next step, stored before that step finished.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WriteEntry {
    /// The task.
    pub task_id: String,
    /// The write's position among the task's writes.
    pub idx: u32,
    /// The name of a reserved index (`error`, `interrupt`, `interrupt+1`,
    /// `resume`, ...); absent for a task's own writes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idx_name: Option<String>,
    /// What it is (`update`, `goto`, `send`, `__error__`, `__interrupt__`, ...).
    pub channel: String,
    /// The stored value.
    pub value: Value,
}

/// An interrupt a task of the next step raised (a node waiting for input).
pub use stategraph_studio::status::InterruptEntry;

/// `show`: one checkpoint in full.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ShowReport {
    /// The thread.
    pub thread_id: String,
    /// The checkpoint.
    pub checkpoint_id: String,
    /// The checkpoint it follows.
    pub parent_id: Option<String>,
    /// When it was written (RFC 3339).
    pub ts: String,
    /// Why it was written.
    pub source: String,
    /// The superstep.
    pub step: i64,
    /// The state's schema version that wrote it.
    pub schema_version: String,
    /// The graph's topology hash when it was written.
    pub graph_version: String,
    /// Every stored channel's value, rebuilt as JSON.
    pub values: BTreeMap<String, Value>,
    /// Every channel's version.
    pub channel_versions: BTreeMap<String, u64>,
    /// Tasks planned for the next step.
    pub next: Vec<NextTask>,
    /// Writes of those tasks stored so far.
    pub pending_writes: Vec<WriteEntry>,
    /// Interrupts those tasks raised.
    pub interrupts: Vec<InterruptEntry>,
    /// The checkpoint's whole metadata.
    pub metadata: Value,
}

/// One channel that differs between two checkpoints.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ChannelDiff {
    /// The channel.
    pub channel: String,
    /// Its value in the first checkpoint; absent when it has none there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub a: Option<Value>,
    /// Its value in the second checkpoint; absent when it has none there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub b: Option<Value>,
}

/// `diff`: what differs between two checkpoints of a thread.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DiffReport {
    /// The thread.
    pub thread_id: String,
    /// The first checkpoint (full id).
    pub a: String,
    /// Its superstep.
    pub a_step: i64,
    /// The second checkpoint (full id).
    pub b: String,
    /// Its superstep.
    pub b_step: i64,
    /// The channels that differ, by name, with both whole values.
    pub changed: Vec<ChannelDiff>,
    /// Each JSON path at which they differ (the channel is the path's first key).
    pub paths: Vec<PathChange>,
}

/// `delete`: what was removed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DeleteReport {
    /// The thread.
    pub thread_id: String,
    /// How many checkpoints it had.
    pub checkpoints: u64,
    /// Always `true`: a thread that was not deleted is an error.
    pub deleted: bool,
}

/// What `stategraph prune` did.
#[derive(Clone, Debug, Serialize)]
pub struct PruneReport {
    /// How many of each thread's newest checkpoints were kept (per namespace).
    pub keep: usize,
    /// Each thread pruned, in order.
    pub threads: Vec<PrunedThread>,
}

/// One pruned thread.
#[derive(Clone, Debug, Serialize)]
pub struct PrunedThread {
    /// The thread.
    pub thread_id: String,
    /// Its checkpoints before.
    pub before: u64,
    /// Its checkpoints after.
    pub after: u64,
}

/// A thread's namespaces (`stategraph namespaces`).
#[derive(Clone, Debug, Serialize)]
pub struct NamespacesReport {
    /// The thread.
    pub thread_id: String,
    /// Its namespaces, sorted (the root graph's, `""`, first).
    pub namespaces: Vec<NamespaceEntry>,
}

/// One namespace of a thread.
#[derive(Clone, Debug, Serialize)]
pub struct NamespaceEntry {
    /// `""` for the root graph, else a subgraph's path (`node:digest`, levels
    /// joined by `|`).
    pub ns: String,
    /// Its checkpoints.
    pub checkpoints: u64,
    /// The step of its latest checkpoint.
    pub latest_step: Option<i64>,
    /// Judged from its latest checkpoint, as for threads.
    pub status: Option<ThreadStatus>,
}

/// Reads reports from one saver; `target` names it in error messages.
pub struct Inspector<'a> {
    saver: &'a dyn CheckpointSaver,
    target: String,
    /// The checkpoint namespace read (empty: the root graph's).
    ns: String,
}

impl<'a> Inspector<'a> {
    /// An inspector of `saver`, which `target` names for the user.
    pub fn new(saver: &'a dyn CheckpointSaver, target: impl Into<String>) -> Self {
        Self {
            saver,
            target: target.into(),
            ns: String::new(),
        }
    }

    /// Reads the checkpoints of namespace `ns` (a subgraph's, as `namespaces` lists
    /// them) instead of the root graph's.
    #[must_use]
    pub fn in_namespace(mut self, ns: impl Into<String>) -> Self {
        self.ns = ns.into();
        self
    }

    /// The config of a thread in the inspector's namespace.
    fn config(&self, thread_id: &str) -> CheckpointConfig {
        let mut config = CheckpointConfig::thread(thread_id);
        config.checkpoint_ns.clone_from(&self.ns);
        config
    }

    /// The thread's namespaces: the root graph's (`""`) and its subgraphs', each
    /// with its number of checkpoints and its latest step.
    ///
    /// # Errors
    /// [`CliError::UnknownThread`] when the store has no such thread.
    pub async fn namespaces(&self, thread_id: &str) -> Result<NamespacesReport, CliError> {
        let names = self.saver.list_namespaces(thread_id).await?;
        if names.is_empty() {
            return Err(self.unknown_thread(thread_id));
        }
        let mut namespaces = Vec::new();
        for ns in names {
            let mut config = CheckpointConfig::thread(thread_id);
            config.checkpoint_ns.clone_from(&ns);
            let tuples = self.saver.list(&config, &ListOptions::new()).await?;
            let latest = tuples.first();
            namespaces.push(NamespaceEntry {
                ns,
                checkpoints: u64::try_from(tuples.len()).unwrap_or(u64::MAX),
                latest_step: latest.map(|t| t.metadata.step),
                status: latest.map(ThreadStatus::of),
            });
        }
        Ok(NamespacesReport {
            thread_id: thread_id.to_string(),
            namespaces,
        })
    }

    /// Every thread, with its status.
    ///
    /// # Errors
    /// [`CliError::Store`] when the saver fails.
    pub async fn threads(&self) -> Result<ThreadsReport, CliError> {
        let mut threads = Vec::new();
        for info in self.saver.list_threads().await? {
            let config = CheckpointConfig::thread(&info.thread_id).at(&info.latest_checkpoint_id);
            let status = match self.saver.get_tuple(&config).await? {
                Some(latest) => ThreadStatus::of(&latest),
                // Deleted since it was listed: nothing planned, nothing waiting.
                None => ThreadStatus::Finished,
            };
            threads.push(ThreadEntry { info, status });
        }
        Ok(ThreadsReport { threads })
    }

    /// The thread's summary.
    ///
    /// # Errors
    /// [`CliError::UnknownThread`] when the store has no such thread.
    pub async fn thread(&self, thread_id: &str) -> Result<ThreadInfo, CliError> {
        self.saver
            .list_threads()
            .await?
            .into_iter()
            .find(|t| t.thread_id == thread_id)
            .ok_or_else(|| self.unknown_thread(thread_id))
    }

    fn unknown_thread(&self, thread_id: &str) -> CliError {
        if self.ns.is_empty() {
            CliError::UnknownThread {
                thread_id: thread_id.to_string(),
                target: self.target.clone(),
            }
        } else {
            CliError::UnknownNamespace {
                thread_id: thread_id.to_string(),
                ns: self.ns.clone(),
                target: self.target.clone(),
            }
        }
    }

    /// The thread's checkpoints, newest first; the newest `limit` when given.
    ///
    /// # Errors
    /// [`CliError::UnknownThread`] when the thread has no checkpoints.
    pub async fn history(
        &self,
        thread_id: &str,
        limit: Option<usize>,
    ) -> Result<HistoryReport, CliError> {
        let info = self.thread(thread_id).await?;
        let mut options = ListOptions::new();
        if let Some(limit) = limit {
            options = options.limit(limit);
        }
        let tuples = self.saver.list(&self.config(thread_id), &options).await?;
        if tuples.is_empty() {
            return Err(self.unknown_thread(thread_id));
        }
        // The saver's count includes every namespace: it is this namespace's only
        // when the thread has no other. Without a limit, what is listed is the whole
        // history.
        let only_root =
            self.ns.is_empty() && self.saver.list_namespaces(thread_id).await?.len() <= 1;
        let total = match limit {
            Some(_) if only_root => info.checkpoint_count,
            Some(_) => {
                let (config, all) = (self.config(thread_id), ListOptions::new());
                let every = self.saver.list(&config, &all).await?;
                u64::try_from(every.len()).unwrap_or(u64::MAX)
            }
            None => u64::try_from(tuples.len()).unwrap_or(u64::MAX),
        };
        Ok(HistoryReport {
            thread_id: thread_id.to_string(),
            total,
            checkpoints: tuples.iter().map(history_entry).collect(),
        })
    }

    /// The checkpoint named by `checkpoint` (see [`ids`] for the names a
    /// checkpoint goes by), or the thread's latest when `None`.
    ///
    /// # Errors
    /// [`CliError::UnknownThread`], [`CliError::UnknownCheckpoint`] or
    /// [`CliError::AmbiguousCheckpoint`].
    pub async fn checkpoint(
        &self,
        thread_id: &str,
        checkpoint: Option<&str>,
    ) -> Result<CheckpointTuple, CliError> {
        let config = self.config(thread_id);
        let Some(wanted) = checkpoint else {
            return self
                .saver
                .get_tuple(&config)
                .await?
                .ok_or_else(|| self.unknown_thread(thread_id));
        };
        if !wanted.is_empty()
            && let Some(exact) = self.saver.get_tuple(&config.clone().at(wanted)).await?
        {
            return Ok(exact);
        }
        let all = self.saver.list(&config, &ListOptions::new()).await?;
        if all.is_empty() {
            return Err(self.unknown_thread(thread_id));
        }
        ids::resolve(thread_id, wanted, all)
    }

    /// One checkpoint in full: the latest when `checkpoint` is `None`.
    ///
    /// # Errors
    /// As [`Inspector::checkpoint`]; [`CliError::Store`] when a value cannot be
    /// rebuilt.
    pub async fn show(
        &self,
        thread_id: &str,
        checkpoint: Option<&str>,
    ) -> Result<ShowReport, CliError> {
        let tuple = self.checkpoint(thread_id, checkpoint).await?;
        let values = channel_values(self.saver, &tuple).await?;
        let cp = &tuple.checkpoint;
        let mut writes = tuple.pending_writes.clone();
        writes.sort_by(|a, b| (&a.task_id, a.idx).cmp(&(&b.task_id, b.idx)));
        let interrupts = writes::interrupts(&writes);
        Ok(ShowReport {
            thread_id: thread_id.to_string(),
            checkpoint_id: cp.id.clone(),
            parent_id: parent_id(&tuple),
            ts: cp.ts.clone(),
            source: source_name(&tuple),
            step: tuple.metadata.step,
            schema_version: cp.schema_version.to_string(),
            graph_version: cp.graph_version.to_string(),
            values,
            channel_versions: cp.channel_versions.clone(),
            next: cp
                .next
                .iter()
                .map(|t| NextTask {
                    node: t.node.clone(),
                    payload: t.payload.clone(),
                })
                .collect(),
            pending_writes: writes
                .into_iter()
                .map(|w| WriteEntry {
                    idx_name: writes::idx_name(w.idx),
                    task_id: w.task_id,
                    idx: w.idx,
                    channel: w.channel,
                    value: w.value,
                })
                .collect(),
            interrupts,
            metadata: serde_json::to_value(&tuple.metadata).unwrap_or(Value::Null),
        })
    }

    /// What differs between checkpoints `a` and `b`: by channel, and by JSON path.
    ///
    /// # Errors
    /// As [`Inspector::show`], for either checkpoint.
    pub async fn diff(&self, thread_id: &str, a: &str, b: &str) -> Result<DiffReport, CliError> {
        let ta = self.checkpoint(thread_id, Some(a)).await?;
        let tb = self.checkpoint(thread_id, Some(b)).await?;
        let mut va = channel_values(self.saver, &ta).await?;
        let mut vb = channel_values(self.saver, &tb).await?;
        let channels: BTreeSet<String> = va.keys().chain(vb.keys()).cloned().collect();
        let mut paths = Vec::new();
        let changed = channels
            .into_iter()
            .filter_map(|channel| {
                let (a, b) = (va.remove(&channel), vb.remove(&channel));
                let path = jsondiff::push_key("$", &channel);
                jsondiff::diff(&path, a.as_ref(), b.as_ref(), &mut paths);
                (a != b).then_some(ChannelDiff { channel, a, b })
            })
            .collect();
        Ok(DiffReport {
            thread_id: thread_id.to_string(),
            a: ta.checkpoint.id,
            a_step: ta.metadata.step,
            b: tb.checkpoint.id,
            b_step: tb.metadata.step,
            changed,
            paths,
        })
    }

    /// Keeps the `keep` newest checkpoints of each thread (per namespace), each
    /// under the thread's writer lock (waiting up to `wait` for a run writing it).
    ///
    /// # Errors
    /// The saver failed, or a thread stayed locked.
    pub async fn prune(
        &self,
        threads: &[ThreadInfo],
        keep: usize,
        wait: std::time::Duration,
    ) -> Result<PruneReport, CliError> {
        let mut pruned = Vec::with_capacity(threads.len());
        for info in threads {
            let _writer = self.saver.lock_thread(&info.thread_id, wait).await?;
            self.saver.prune(&info.thread_id, keep).await?;
            let after = self
                .saver
                .list_threads()
                .await?
                .into_iter()
                .find(|t| t.thread_id == info.thread_id)
                .map_or(0, |t| t.checkpoint_count);
            pruned.push(PrunedThread {
                thread_id: info.thread_id.clone(),
                before: info.checkpoint_count,
                after,
            });
        }
        Ok(PruneReport {
            keep,
            threads: pruned,
        })
    }

    /// Deletes the thread (after `info` was read and confirmed).
    ///
    /// # Errors
    /// [`CliError::Store`] when the saver fails.
    pub async fn delete(&self, info: &ThreadInfo) -> Result<DeleteReport, CliError> {
        self.saver.delete_thread(&info.thread_id).await?;
        Ok(DeleteReport {
            thread_id: info.thread_id.clone(),
            checkpoints: info.checkpoint_count,
            deleted: true,
        })
    }
}

fn history_entry(tuple: &CheckpointTuple) -> HistoryEntry {
    HistoryEntry {
        checkpoint_id: tuple.checkpoint.id.clone(),
        parent_id: parent_id(tuple),
        ts: tuple.checkpoint.ts.clone(),
        source: source_name(tuple),
        step: tuple.metadata.step,
        updated_channels: tuple.checkpoint.updated_channels.clone(),
        next: tuple
            .checkpoint
            .next
            .iter()
            .map(|t| t.node.clone())
            .collect(),
        pending_writes: tuple.pending_writes.len(),
    }
}
