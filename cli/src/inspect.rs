//! The reports each command produces, read from a saver. Each report serializes to
//! the command's `--json` output; the field names are part of the CLI's interface.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::Value;
use stategraph::checkpoint::{
    CheckpointConfig, CheckpointSaver, CheckpointTuple, ListOptions, PendingWrite, ThreadInfo,
    channel_values,
};

use crate::error::CliError;

/// The channel of a pending write that records an interrupt.
const INTERRUPT_WRITE: &str = "__interrupt__";
/// The channel of a pending write that records the answer to an interrupt.
const RESUME_WRITE: &str = "__resume__";

/// `threads`: every stored thread, ordered by id.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ThreadsReport {
    /// One entry per thread.
    pub threads: Vec<ThreadInfo>,
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
    /// What it is (`update`, `goto`, `send`, `__error__`, `__interrupt__`, ...).
    pub channel: String,
    /// The stored value.
    pub value: Value,
}

/// An interrupt a task of the next step raised (a node waiting for input).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct InterruptEntry {
    /// The task that raised it.
    pub task_id: String,
    /// The interrupt's id (what a resume by id names).
    pub id: Option<String>,
    /// The node that asked.
    pub node: Option<String>,
    /// What it asked with.
    pub value: Value,
    /// Whether it was answered: the task stored an answer for it, or finished. An
    /// unanswered interrupt is what the thread is waiting for.
    pub answered: bool,
}

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

/// `diff`: the channels whose values differ between two checkpoints of a thread.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DiffReport {
    /// The thread.
    pub thread_id: String,
    /// The first checkpoint (full id).
    pub a: String,
    /// The second checkpoint (full id).
    pub b: String,
    /// The channels that differ, by name.
    pub changed: Vec<ChannelDiff>,
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

/// Reads reports from one saver; `target` names it in error messages.
pub struct Inspector<'a> {
    saver: &'a dyn CheckpointSaver,
    target: String,
}

impl<'a> Inspector<'a> {
    /// An inspector of `saver`, which `target` names for the user.
    pub fn new(saver: &'a dyn CheckpointSaver, target: impl Into<String>) -> Self {
        Self {
            saver,
            target: target.into(),
        }
    }

    /// Every thread.
    ///
    /// # Errors
    /// [`CliError::Store`] when the saver fails.
    pub async fn threads(&self) -> Result<ThreadsReport, CliError> {
        Ok(ThreadsReport {
            threads: self.saver.list_threads().await?,
        })
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
        CliError::UnknownThread {
            thread_id: thread_id.to_string(),
            target: self.target.clone(),
        }
    }

    /// The thread's checkpoints, newest first.
    ///
    /// # Errors
    /// [`CliError::UnknownThread`] when the thread has no checkpoints.
    pub async fn history(&self, thread_id: &str) -> Result<HistoryReport, CliError> {
        let tuples = self
            .saver
            .list(&CheckpointConfig::thread(thread_id), &ListOptions::new())
            .await?;
        if tuples.is_empty() {
            return Err(self.unknown_thread(thread_id));
        }
        Ok(HistoryReport {
            thread_id: thread_id.to_string(),
            checkpoints: tuples.iter().map(history_entry).collect(),
        })
    }

    /// The checkpoint named by `checkpoint` (a whole id, or a prefix of exactly one),
    /// or the thread's latest when `None`.
    ///
    /// # Errors
    /// [`CliError::UnknownThread`], [`CliError::UnknownCheckpoint`] or
    /// [`CliError::AmbiguousCheckpoint`].
    pub async fn checkpoint(
        &self,
        thread_id: &str,
        checkpoint: Option<&str>,
    ) -> Result<CheckpointTuple, CliError> {
        let config = CheckpointConfig::thread(thread_id);
        let Some(wanted) = checkpoint else {
            return self
                .saver
                .get_tuple(&config)
                .await?
                .ok_or_else(|| self.unknown_thread(thread_id));
        };
        if let Some(exact) = self.saver.get_tuple(&config.clone().at(wanted)).await? {
            return Ok(exact);
        }
        let all = self.saver.list(&config, &ListOptions::new()).await?;
        if all.is_empty() {
            return Err(self.unknown_thread(thread_id));
        }
        let mut matching: Vec<CheckpointTuple> = all
            .into_iter()
            .filter(|t| !wanted.is_empty() && t.checkpoint.id.starts_with(wanted))
            .collect();
        match matching.len() {
            0 => Err(CliError::UnknownCheckpoint {
                thread_id: thread_id.to_string(),
                checkpoint: wanted.to_string(),
            }),
            1 => Ok(matching.remove(0)),
            count => Err(CliError::AmbiguousCheckpoint {
                thread_id: thread_id.to_string(),
                prefix: wanted.to_string(),
                count,
                examples: matching
                    .iter()
                    .take(3)
                    .map(|t| t.checkpoint.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        }
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
        let interrupts = interrupts(&writes);
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

    /// The channels whose values differ between checkpoints `a` and `b`.
    ///
    /// # Errors
    /// As [`Inspector::show`], for either checkpoint.
    pub async fn diff(&self, thread_id: &str, a: &str, b: &str) -> Result<DiffReport, CliError> {
        let ta = self.checkpoint(thread_id, Some(a)).await?;
        let tb = self.checkpoint(thread_id, Some(b)).await?;
        let mut va = channel_values(self.saver, &ta).await?;
        let mut vb = channel_values(self.saver, &tb).await?;
        let channels: BTreeSet<String> = va.keys().chain(vb.keys()).cloned().collect();
        let changed = channels
            .into_iter()
            .filter_map(|channel| {
                let (a, b) = (va.remove(&channel), vb.remove(&channel));
                (a != b).then_some(ChannelDiff { channel, a, b })
            })
            .collect();
        Ok(DiffReport {
            thread_id: thread_id.to_string(),
            a: ta.checkpoint.id,
            b: tb.checkpoint.id,
            changed,
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

/// The interrupts among a checkpoint's pending writes (sorted by task and index). A
/// task's k-th interrupt is answered once the task stored k answers, or when it
/// finished (stored a write of its own).
fn interrupts(writes: &[PendingWrite]) -> Vec<InterruptEntry> {
    let of_task = |task: &str, channel: &str| {
        writes
            .iter()
            .filter(|w| w.task_id == task && w.channel == channel)
            .count()
    };
    let finished = |task: &str| {
        writes
            .iter()
            .any(|w| w.task_id == task && !w.channel.starts_with("__"))
    };
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    writes
        .iter()
        .filter(|w| w.channel == INTERRUPT_WRITE)
        .map(|w| {
            let nth = seen.entry(w.task_id.as_str()).or_default();
            *nth += 1;
            let field = |name: &str| w.value.get(name).and_then(Value::as_str).map(String::from);
            InterruptEntry {
                task_id: w.task_id.clone(),
                id: field("id"),
                node: field("node"),
                value: w.value.get("value").cloned().unwrap_or(Value::Null),
                answered: finished(&w.task_id) || of_task(&w.task_id, RESUME_WRITE) >= *nth,
            }
        })
        .collect()
}

fn parent_id(tuple: &CheckpointTuple) -> Option<String> {
    tuple
        .parent_config
        .as_ref()
        .and_then(|p| p.checkpoint_id.clone())
}

fn source_name(tuple: &CheckpointTuple) -> String {
    match serde_json::to_value(tuple.metadata.source) {
        Ok(Value::String(s)) => s,
        _ => format!("{:?}", tuple.metadata.source).to_lowercase(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn write(task: &str, idx: u32, channel: &str, value: Value) -> PendingWrite {
        PendingWrite {
            task_id: task.into(),
            idx,
            channel: channel.into(),
            value,
        }
    }

    fn asked(id: &str) -> Value {
        json!({ "id": id, "node": "ask", "value": { "q": id } })
    }

    #[test]
    fn an_interrupt_is_answered_by_its_own_answer_or_when_its_task_finished() {
        let writes = vec![
            // Asked twice, answered once: the first is answered, the second waits.
            write("1:ask", 10, INTERRUPT_WRITE, asked("first")),
            write("1:ask", 11, INTERRUPT_WRITE, asked("second")),
            write("1:ask", 5, RESUME_WRITE, json!("yes")),
            // Asked, then finished: answered.
            write("1:other", 0, "update", json!({})),
            write("1:other", 10, INTERRUPT_WRITE, asked("done")),
            // Asked, nothing else: waiting.
            write("1:third", 10, INTERRUPT_WRITE, asked("open")),
        ];
        let got: Vec<(Option<String>, bool)> = interrupts(&writes)
            .into_iter()
            .map(|i| (i.id, i.answered))
            .collect();
        assert_eq!(
            got,
            [
                (Some("first".into()), true),
                (Some("second".into()), false),
                (Some("done".into()), true),
                (Some("open".into()), false),
            ]
        );
        let first = &interrupts(&writes)[0];
        assert_eq!(first.node.as_deref(), Some("ask"));
        assert_eq!(first.value, json!({ "q": "first" }));
        assert_eq!(first.task_id, "1:ask");
    }
}
