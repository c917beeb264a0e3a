//! Where a thread stands, judged from its newest checkpoint and that checkpoint's
//! pending writes, and the interrupts those writes hold: shared by the Studio and
//! the `stategraph` command.
//!
//! The reserved channels and index ranges are the library's
//! ([`stategraph::checkpoint::writes`]).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;
use stategraph::checkpoint::writes::{WRITE_ERROR, WRITE_INTERRUPT, WRITE_REJECTED, WRITE_RESUME};
use stategraph::checkpoint::{CheckpointTuple, PendingWrite};

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

/// Whether `write` is a task's own output rather than a record of an error, an
/// interrupt, an answer or a rejected attempt.
fn is_output(write: &PendingWrite) -> bool {
    !write.is_outcome_record()
}

/// The interrupts among a checkpoint's pending writes (sorted by task and index). A
/// task's k-th interrupt is answered once the task stored k answers, or when it
/// finished (stored an output write).
pub fn interrupts(writes: &[PendingWrite]) -> Vec<InterruptEntry> {
    let of_task = |task: &str, channel: &str| {
        writes
            .iter()
            .filter(|w| w.task_id == task && w.channel == channel)
            .count()
    };
    let finished = |task: &str| writes.iter().any(|w| w.task_id == task && is_output(w));
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    writes
        .iter()
        .filter(|w| w.channel == WRITE_INTERRUPT)
        .map(|w| {
            let nth = seen.entry(w.task_id.as_str()).or_default();
            *nth += 1;
            let field = |name: &str| w.value.get(name).and_then(Value::as_str).map(String::from);
            InterruptEntry {
                task_id: w.task_id.clone(),
                id: field("id"),
                node: field("node"),
                value: w.value.get("value").cloned().unwrap_or(Value::Null),
                answered: finished(&w.task_id) || of_task(&w.task_id, WRITE_RESUME) >= *nth,
            }
        })
        .collect()
}

/// Where a thread stands, judged from its newest checkpoint and that checkpoint's
/// pending writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ThreadStatus {
    /// A task of the next step recorded an error and has no output: the last run
    /// stopped on it (a run continuing the thread tries the task again).
    Failed,
    /// A task of the next step waits for an answer to an interrupt.
    Interrupted,
    /// No task is planned: the run reached the end.
    Finished,
    /// Tasks are planned and none failed or waits: a run is working on the thread,
    /// or one stopped (was killed) and a run continuing it picks up from here.
    Running,
}

impl ThreadStatus {
    /// The status of a thread whose newest checkpoint is `latest`. A failure is
    /// reported before an interrupt of a sibling task: it is what stopped the run.
    pub fn of(latest: &CheckpointTuple) -> Self {
        let writes = &latest.pending_writes;
        let failed = writes.iter().any(|w| {
            w.channel == WRITE_REJECTED
                || (w.channel == WRITE_ERROR
                    && !writes
                        .iter()
                        .any(|o| o.task_id == w.task_id && is_output(o)))
        });
        if failed {
            ThreadStatus::Failed
        } else if interrupts(writes).iter().any(|i| !i.answered) {
            ThreadStatus::Interrupted
        } else if latest.checkpoint.next.is_empty() {
            ThreadStatus::Finished
        } else {
            ThreadStatus::Running
        }
    }

    /// The lowercase name shown in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            ThreadStatus::Failed => "failed",
            ThreadStatus::Interrupted => "interrupted",
            ThreadStatus::Finished => "finished",
            ThreadStatus::Running => "running",
        }
    }

    /// The status named `name` (as [`ThreadStatus::name`] gives it).
    pub fn parse(name: &str) -> Option<Self> {
        [
            ThreadStatus::Failed,
            ThreadStatus::Interrupted,
            ThreadStatus::Finished,
            ThreadStatus::Running,
        ]
        .into_iter()
        .find(|s| s.name() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use stategraph::checkpoint::writes::{IDX_INTERRUPT, IDX_RESUME};

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
            write("1:ask", IDX_INTERRUPT, WRITE_INTERRUPT, asked("first")),
            write("1:ask", IDX_INTERRUPT + 1, WRITE_INTERRUPT, asked("second")),
            write("1:ask", IDX_RESUME, WRITE_RESUME, json!("yes")),
            // Asked, then finished: answered.
            write("1:other", 0, "update", json!({})),
            write("1:other", IDX_INTERRUPT, WRITE_INTERRUPT, asked("done")),
            // Asked, then finished without writing: answered.
            write("1:quiet", 0, "__done__", Value::Null),
            write("1:quiet", IDX_INTERRUPT, WRITE_INTERRUPT, asked("quiet")),
            // Asked, nothing else: waiting.
            write("1:third", IDX_INTERRUPT, WRITE_INTERRUPT, asked("open")),
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
                (Some("quiet".into()), true),
                (Some("open".into()), false),
            ]
        );
        let first = &interrupts(&writes)[0];
        assert_eq!(first.node.as_deref(), Some("ask"));
        assert_eq!(first.value, json!({ "q": "first" }));
        assert_eq!(first.task_id, "1:ask");
    }

    #[test]
    fn statuses_parse_from_their_names() {
        for s in [
            ThreadStatus::Failed,
            ThreadStatus::Interrupted,
            ThreadStatus::Finished,
            ThreadStatus::Running,
        ] {
            assert_eq!(ThreadStatus::parse(s.name()), Some(s));
            assert_eq!(serde_json::to_value(s).ok(), Some(json!(s.name())));
        }
        assert_eq!(ThreadStatus::parse("done"), None);
    }
}
