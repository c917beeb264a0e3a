//! Loading a thread into the loop: state, versions, frontier, saved writes,
//! pending interrupts and resume answers, from a checkpoint tuple; and, per step,
//! what is already known of its tasks from what was saved.

use std::collections::HashMap;
use std::sync::Arc;

use super::config::Durability;
use super::error::RunError;
use super::persist;
use super::run_loop::{COMMAND_TASK, Loop};
use super::runner::Known;
use super::writer::Persist;
use crate::checkpoint::{CheckpointError, CheckpointTuple, PendingWrite};
use crate::node::Interrupt;
use crate::state::GraphState;

impl<'g, S: GraphState> Loop<'g, S> {
    pub(super) async fn load(&mut self, t: &CheckpointTuple, fork: bool) -> Result<(), RunError> {
        let Some(p) = &mut self.persist else {
            return Ok(());
        };
        let restored = persist::restore::<S>(&*p.saver, t, &self.g.migrations).await?;
        self.state = restored.state;
        self.versions = restored.versions;
        self.bases = restored.bases;
        if restored.migrated {
            // Old blobs keep serving old checkpoints; the migrated values are stored
            // whole at new versions by the next checkpoint.
            for info in S::CHANNELS {
                self.versions[info.index] = self.versions[info.index].saturating_add(1);
                p.unsaved.record(info.index, crate::state::Change::Replaced);
            }
            p.dirty = true;
        }
        self.step = t.metadata.step.saturating_add(1);
        p.parent = t.config.checkpoint_id.clone();
        p.shape_due = p.ns.is_empty() && *t.checkpoint.graph_version != *self.g.version;
        if let Some(last) = t.metadata.steps.last() {
            p.last_writers = last
                .tasks
                .iter()
                .filter(|r| r.wrote)
                .map(|r| Arc::from(r.node.as_str()))
                .collect();
        }
        self.load_frontier(t)?;
        if fork {
            self.move_past_branches(t).await
        } else {
            self.load_pending_writes(t)
        }
    }

    /// The tasks the checkpoint planned next, and the joins' barriers.
    fn load_frontier(&mut self, t: &CheckpointTuple) -> Result<(), RunError> {
        let id = &t.checkpoint.id;
        for planned in &t.checkpoint.next {
            match &planned.payload {
                None => {
                    let i = *self.g.index.get(planned.node.as_str()).ok_or_else(|| {
                        CheckpointError::UnknownNode {
                            id: id.clone(),
                            node: planned.node.clone(),
                        }
                    })?;
                    self.next.pull(i);
                }
                Some(payload) => {
                    let (i, payload) =
                        persist::decode_payload(self.g, id, &planned.node, payload.clone())?;
                    self.next.push(i, payload);
                }
            }
        }
        for (j, sources) in &t.checkpoint.barriers {
            if let Some(join) = self.g.joins.get(*j) {
                for (pos, &s) in join.sources.iter().enumerate() {
                    if sources.iter().any(|n| *n == *self.g.nodes[s].name) {
                        self.barriers[*j][pos] = true;
                    }
                }
            }
        }
        Ok(())
    }

    /// A new branch from an older checkpoint must not reuse version numbers another
    /// branch already stored values under: each channel moves past the thread's
    /// highest version and is stored whole by the next checkpoint.
    async fn move_past_branches(&mut self, t: &CheckpointTuple) -> Result<(), RunError> {
        let Some(p) = &mut self.persist else {
            return Ok(());
        };
        for info in S::CHANNELS {
            let i = info.index;
            let highest = p.saver.max_version(&t.config, info.name).await?;
            if let Some(highest) = highest.filter(|h| *h > self.versions[i]) {
                self.versions[i] = highest.saturating_add(1);
                self.bases[i] = None;
                p.unsaved.record(i, crate::state::Change::Replaced);
            }
        }
        Ok(())
    }

    /// The checkpoint's saved writes: finished tasks' writes, interrupts waiting for
    /// an answer, the answers given, and resume commands, which are applied again.
    fn load_pending_writes(&mut self, t: &CheckpointTuple) -> Result<(), RunError> {
        let Some(p) = &mut self.persist else {
            return Ok(());
        };
        let id = &t.checkpoint.id;
        sort_pending_writes(p, t)?;
        // Resume commands given while paused here are applied again, in order.
        let mut commands: Vec<(usize, Vec<PendingWrite>)> = p
            .resumed
            .iter()
            .filter_map(|(task, writes)| {
                let n = task
                    .strip_prefix(COMMAND_TASK)?
                    .strip_prefix(':')?
                    .parse()
                    .ok()?;
                Some((n, writes.clone()))
            })
            .collect();
        commands.sort_by_key(|(n, _)| *n);
        p.commands = commands.last().map_or(0, |(n, _)| n + 1);
        let mut outputs = Vec::new();
        for (_, writes) in &commands {
            let writes: Vec<&PendingWrite> = writes.iter().collect();
            outputs.push(persist::decode_output(self.g, &p.thread, id, &writes)?);
        }
        for out in outputs {
            self.apply_command_output(out)?;
        }
        if let Some(p) = &mut self.persist {
            // The replayed commands are part of the loaded step, not new changes.
            p.dirty = false;
        }
        Ok(())
    }
}

/// Sorts a checkpoint's saved writes into `p`: the writes of finished tasks, the
/// interrupts still waiting (with the call each waits at and what it expects), the
/// answers given so far.
fn sort_pending_writes(p: &mut Persist, t: &CheckpointTuple) -> Result<(), RunError> {
    let id = &t.checkpoint.id;
    let mut writes: Vec<&PendingWrite> = t.pending_writes.iter().collect();
    writes.sort_by(|a, b| (&a.task_id, a.idx).cmp(&(&b.task_id, b.idx)));
    let mut paused_at: HashMap<String, u64> = HashMap::new();
    for w in writes {
        match w.channel.as_str() {
            persist::WRITE_ERROR => {}
            persist::WRITE_REJECTED => p.reruns += 1,
            persist::WRITE_INTERRUPT => {
                let i = serde_json::from_value::<Interrupt>(w.value.clone()).map_err(|e| {
                    CheckpointError::InvalidWrite {
                        thread: p.thread.clone(),
                        checkpoint: id.clone(),
                        task: w.task_id.clone(),
                        channel: w.channel.clone(),
                        reason: format!("not an interrupt: {e}"),
                    }
                })?;
                // The last record of a task is the call it waits at.
                if let Some(index) = w
                    .value
                    .get(crate::node::answer::RECORD_INDEX)
                    .and_then(serde_json::Value::as_u64)
                {
                    paused_at.insert(w.task_id.clone(), index);
                }
                if let Some(expects) = w
                    .value
                    .get(crate::node::answer::RECORD_EXPECTS)
                    .and_then(serde_json::Value::as_str)
                {
                    p.expects.insert(w.task_id.clone(), expects.to_string());
                }
                p.waiting.insert(w.task_id.clone(), i);
            }
            persist::WRITE_RESUME => {
                p.answers
                    .entry(w.task_id.clone())
                    .or_default()
                    .push(w.value.clone());
            }
            _ => p
                .resumed
                .entry(w.task_id.clone())
                .or_default()
                .push(w.clone()),
        }
    }
    // A task that finished after answering its interrupts is not waiting.
    let done: Vec<String> = p.resumed.keys().cloned().collect();
    for id in done {
        p.waiting.remove(&id);
    }
    // Answers from the call a task waits at on are not kept: an answer that call
    // refused is replaced by the next resume, not added after.
    for (task, index) in paused_at {
        if p.waiting.contains_key(&task)
            && let Some(answers) = p.answers.get_mut(&task)
        {
            answers.truncate(usize::try_from(index).unwrap_or(usize::MAX));
        }
    }
    Ok(())
}

impl<S: GraphState> Loop<'_, S> {
    /// Per task, the key its interrupt ids derive from: `{thread}:{checkpoint}:{id}`.
    #[inline]
    pub(super) fn task_keys(&mut self, ids: &[String]) -> Vec<Arc<str>> {
        let (thread, checkpoint) = self.persist.as_ref().map_or(("", ""), |p| {
            (p.thread.as_str(), p.parent.as_deref().unwrap_or_default())
        });
        // Written into one reused buffer: only the shared key is allocated.
        let buf = &mut self.key_buf;
        ids.iter()
            .map(|id| {
                buf.clear();
                for part in [thread, ":", checkpoint, ":", id.as_str()] {
                    buf.push_str(part);
                }
                Arc::from(buf.as_str())
            })
            .collect()
    }

    /// What is known of the step's tasks before they run. Tasks whose writes were
    /// saved before a crash or a sibling's failure are not run again: their saved
    /// writes stand in for them. Tasks waiting on an unanswered interrupt stay
    /// waiting. Returns, per task, that knowledge and (when some task has answers)
    /// its resume answers, and the answers as writes to save before the tasks run
    /// (see [`Loop::save_answers`]).
    #[allow(clippy::type_complexity)]
    #[inline]
    pub(super) fn known_tasks(
        &mut self,
        ids: &[String],
        count: usize,
    ) -> Result<
        (
            Vec<Known<S>>,
            Vec<Arc<[serde_json::Value]>>,
            Vec<PendingWrite>,
        ),
        RunError,
    > {
        let g = self.g;
        let mut known: Vec<Known<S>> = Vec::with_capacity(count);
        // Per task, when some task has answers (a task without an entry has none).
        let mut resume: Vec<Arc<[serde_json::Value]>> = Vec::new();
        let mut answer_writes = Vec::new();
        let Some(p) = &mut self.persist else {
            known.resize_with(count, || Known::Run);
            return Ok((known, resume, answer_writes));
        };
        let checkpoint = p.parent.as_deref().unwrap_or_default();
        let saved = std::mem::take(&mut p.resumed);
        let mut waiting = std::mem::take(&mut p.waiting);
        let answers = std::mem::take(&mut p.answers);
        if !answers.is_empty() {
            resume.reserve_exact(count);
        }
        for id in ids {
            let given = answers.get(id).cloned().unwrap_or_default();
            for (n, value) in given.iter().enumerate() {
                answer_writes.push(PendingWrite {
                    task_id: id.clone(),
                    idx: persist::IDX_RESUME + u32::try_from(n).unwrap_or(0),
                    channel: persist::WRITE_RESUME.to_string(),
                    value: value.clone(),
                });
            }
            if !answers.is_empty() {
                resume.push(if given.is_empty() {
                    self.no_answers.clone()
                } else {
                    Arc::from(given)
                });
            }
            // Checked first: removing from a map hashes the key even when empty.
            let interrupt = if waiting.is_empty() {
                None
            } else {
                waiting.remove(id)
            };
            known.push(match (saved.get(id), interrupt) {
                (Some(writes), _) => {
                    let writes: Vec<&PendingWrite> = writes.iter().collect();
                    Known::Output(persist::decode_output(g, &p.thread, checkpoint, &writes)?)
                }
                (None, Some(interrupt)) => Known::Waiting(interrupt),
                (None, None) => Known::Run,
            });
        }
        Ok((known, resume, answer_writes))
    }

    /// Saves resume answers before the tasks run, so a later interrupt of the same
    /// task keeps them (saving the same answer twice is a no-op).
    pub(super) async fn save_answers(&mut self, writes: Vec<PendingWrite>) -> Result<(), RunError> {
        let Some(p) = &mut self.persist else {
            return Ok(());
        };
        if p.parent.is_some() && p.durability != Durability::Exit {
            let at = p.at(p.parent.clone());
            p.saver.put_writes(&at, writes).await?;
        } else {
            p.buffered.extend(writes);
        }
        Ok(())
    }
}
