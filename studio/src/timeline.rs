//! A thread's timeline: its root checkpoints oldest first, each with the tasks of
//! the step that produced it, the branch it is on, and the edges the thread took.

use std::collections::{HashMap, HashSet};

use serde_json::Value;
use stategraph::GraphShape;
use stategraph::checkpoint::writes::{WRITE_ERROR, WRITE_UPDATE};
use stategraph::checkpoint::{CheckpointTuple, PendingWrite};

use crate::record::{parent_id, source_name};
use crate::status::{self, InterruptEntry};
use crate::views::{FailedTask, InterruptView, TaskView, TimelineEntry};

/// The interrupts among `tuple`'s pending writes.
pub(crate) fn interrupts(tuple: &CheckpointTuple) -> Vec<InterruptView> {
    let mut writes = tuple.pending_writes.clone();
    writes.sort_by(|a, b| (&a.task_id, a.idx).cmp(&(&b.task_id, b.idx)));
    status::interrupts(&writes)
        .into_iter()
        .map(
            |InterruptEntry {
                 id,
                 node,
                 value,
                 answered,
                 ..
             }| InterruptView {
                id,
                node,
                value,
                ns: tuple.config.checkpoint_ns.clone(),
                answered,
            },
        )
        .collect()
}

/// The node of a task id: `{step}:{node}` or `{step}:{node}:send{k}`.
fn node_of(task_id: &str) -> String {
    task_id.split(':').nth(1).unwrap_or(task_id).to_string()
}

fn error_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The value of one stored channel write, `{"reduce": v}` or `{"overwrite": v}`:
/// `v` (what the node wrote, before the reducer), as `update_to_json` gives it.
fn written_value(stored: &Value) -> Value {
    match stored {
        Value::Object(map) if map.len() == 1 => map
            .get("reduce")
            .or_else(|| map.get("overwrite"))
            .cloned()
            .unwrap_or_else(|| stored.clone()),
        other => other.clone(),
    }
}

/// The tasks of the step(s) that produced `tuple`, with what each wrote as stored
/// on `parent` (the checkpoint they ran after).
fn tasks(tuple: &CheckpointTuple, parent: Option<&CheckpointTuple>) -> Vec<TaskView> {
    let writes: &[PendingWrite] = parent.map_or(&[], |p| &p.pending_writes);
    let single_step = tuple.metadata.steps.len() == 1;
    tuple
        .metadata
        .steps
        .iter()
        .flat_map(|s| &s.tasks)
        .map(|t| {
            let own: Vec<&PendingWrite> = if single_step {
                writes.iter().filter(|w| w.task_id == t.id).collect()
            } else {
                Vec::new()
            };
            let errors: Vec<&&PendingWrite> =
                own.iter().filter(|w| w.channel == WRITE_ERROR).collect();
            let mut written = serde_json::Map::new();
            let mut stored = false;
            for w in own.iter().filter(|w| !w.is_outcome_record()) {
                stored = true;
                if w.channel == WRITE_UPDATE
                    && let Value::Object(fields) = &w.value
                {
                    written.extend(fields.iter().map(|(k, v)| (k.clone(), written_value(v))));
                }
            }
            TaskView {
                id: t.id.clone(),
                node: t.node.clone(),
                duration_us: t.duration_us,
                cached: t.cached,
                resumed: t.resumed,
                attempts: 1 + u32::try_from(errors.len()).unwrap_or(u32::MAX - 1),
                error: errors.last().map(|w| error_text(&w.value)),
                writes: stored.then_some(written),
                routed_to: t.routed_to.clone(),
            }
        })
        .collect()
}

/// Tasks of the step after `tuple` that recorded an error and did not finish.
fn failed(tuple: &CheckpointTuple) -> Vec<FailedTask> {
    let writes = &tuple.pending_writes;
    let mut out: Vec<FailedTask> = writes
        .iter()
        .filter(|w| w.channel == WRITE_ERROR)
        .filter(|w| {
            !writes
                .iter()
                .any(|o| o.task_id == w.task_id && !o.is_outcome_record())
        })
        .map(|w| FailedTask {
            task_id: w.task_id.clone(),
            node: node_of(&w.task_id),
            error: error_text(&w.value),
        })
        .collect();
    out.sort_by(|a, b| a.task_id.cmp(&b.task_id));
    out
}

/// The timeline of a thread whose root checkpoints are `newest_first` (as a saver
/// lists them; the first is the latest), oldest first.
pub(crate) fn timeline(newest_first: &[CheckpointTuple]) -> Vec<TimelineEntry> {
    let by_id: HashMap<&str, &CheckpointTuple> = newest_first
        .iter()
        .map(|t| (t.checkpoint.id.as_str(), t))
        .collect();
    let main = main_line(newest_first);
    let mut branch_of: HashMap<&str, u32> = HashMap::new();
    // Per parent, whether a child off the main line continued its branch already.
    let mut continued: HashSet<&str> = HashSet::new();
    let mut next_branch = 1;
    let mut out = Vec::with_capacity(newest_first.len());
    for tuple in newest_first.iter().rev() {
        let id = tuple.checkpoint.id.as_str();
        let parent = parent_id(tuple);
        let parent_tuple = parent.as_deref().and_then(|p| by_id.get(p).copied());
        let branch = if main.contains(id) {
            0
        } else {
            let inherited = parent_tuple.and_then(|p| {
                let pid = p.checkpoint.id.as_str();
                let b = *branch_of.get(pid)?;
                (b != 0 && continued.insert(pid)).then_some(b)
            });
            inherited.unwrap_or_else(|| {
                next_branch += 1;
                next_branch - 1
            })
        };
        branch_of.insert(id, branch);
        out.push(TimelineEntry {
            checkpoint_id: id.to_string(),
            parent_checkpoint_id: parent,
            step: tuple.metadata.step,
            source: source_name(tuple),
            created_at: tuple.checkpoint.ts.clone(),
            next: tuple
                .checkpoint
                .next
                .iter()
                .map(|t| t.node.clone())
                .collect(),
            interrupts: interrupts(tuple),
            tasks: tasks(tuple, parent_tuple),
            errors: failed(tuple),
            branch,
        });
    }
    out
}

/// The ids of the latest checkpoint and its ancestors.
fn main_line(newest_first: &[CheckpointTuple]) -> HashSet<&str> {
    let by_id: HashMap<&str, &CheckpointTuple> = newest_first
        .iter()
        .map(|t| (t.checkpoint.id.as_str(), t))
        .collect();
    let mut line = HashSet::new();
    let mut at = newest_first.first();
    while let Some(tuple) = at {
        if !line.insert(tuple.checkpoint.id.as_str()) {
            break;
        }
        at = tuple
            .parent_config
            .as_ref()
            .and_then(|p| p.checkpoint_id.as_deref())
            .and_then(|p| by_id.get(p).copied());
    }
    line
}

/// The edges the thread took on its latest line (`timeline`'s branch 0), in order,
/// each once: from `__start__` to the first step's nodes, from each step's nodes to
/// the next step's along the graph's edges (or where a router sent them), and to
/// `__end__` when the thread finished. Without a `shape`, consecutive steps' nodes
/// are paired whenever a router did not say where it went.
pub(crate) fn path(
    timeline: &[TimelineEntry],
    shape: Option<&GraphShape>,
    finished: bool,
) -> Vec<(String, String)> {
    let declared: Option<HashSet<(&str, &str)>> = shape.map(|s| {
        s.edges
            .iter()
            .map(|e| (e.source.as_str(), e.target.as_str()))
            .collect()
    });
    let mut out: Vec<(String, String)> = Vec::new();
    let mut push = |from: &str, to: &str| {
        if !out.iter().any(|(f, t)| f == from && t == to) {
            out.push((from.to_string(), to.to_string()));
        }
    };
    let taken = |from: &str, routed: &[String], to: &str| {
        if routed.iter().any(|r| r == to) {
            true
        } else if let Some(edges) = &declared {
            routed.is_empty() && edges.contains(&(from, to))
        } else {
            routed.is_empty()
        }
    };
    let mut prev: Vec<(String, Vec<String>)> = vec![("__start__".to_string(), Vec::new())];
    let line: Vec<&TimelineEntry> = timeline.iter().filter(|e| e.branch == 0).collect();
    for entry in &line {
        if entry.tasks.is_empty() {
            continue;
        }
        for task in &entry.tasks {
            for (from, routed) in &prev {
                if taken(from, routed, &task.node) {
                    push(from, &task.node);
                }
            }
        }
        prev = entry
            .tasks
            .iter()
            .map(|t| (t.node.clone(), t.routed_to.clone()))
            .collect();
    }
    // Into the nodes planned next (a paused thread's interrupted node, say).
    if let Some(latest) = line.last() {
        for node in &latest.next {
            for (from, routed) in &prev {
                if taken(from, routed, node) {
                    push(from, node);
                }
            }
        }
    }
    if finished {
        for (from, routed) in &prev {
            let ends = routed.iter().any(|r| r == "__end__" || r == "END")
                || declared
                    .as_ref()
                    .is_some_and(|d| d.contains(&(from.as_str(), "__end__")));
            if ends {
                push(from, "__end__");
            }
        }
    }
    out
}
