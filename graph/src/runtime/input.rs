//! What enters a thread from outside a step: a run's input, a resume `Command`,
//! and `update_state` writes.

use std::sync::Arc;

use super::algo::{follow_route, schedule};
use super::error::{ContinueReason, RunError};
use super::run_loop::{COMMAND_TASK, END_WRITER, INPUT_WRITER, Loop};
use super::update::Writer;
use super::{config, events, persist};
use crate::checkpoint::CheckpointSource;
use crate::node::{Command, Interrupt, NodeOutput, Resume};
use crate::state::{ChangeSet, GraphState, Write};

impl<'g, S: GraphState> Loop<'g, S> {
    /// Applies a resume command's update and destinations to the paused step.
    pub(super) fn apply_command_output(&mut self, command: NodeOutput<S>) -> Result<(), RunError> {
        if !command.writes.is_empty() {
            let writes = command
                .writes
                .into_iter()
                .map(|u| Write::new(INPUT_WRITER, u))
                .collect();
            let changes = self
                .state
                .apply_writes(writes)
                .map_err(|source| RunError::InvalidUpdate { step: None, source })?;
            self.record(&changes);
        }
        self.next.from(|| "resume".into());
        for target in command.goto {
            schedule(self.g, target, INPUT_WRITER, &mut self.next)?;
        }
        Ok(())
    }

    pub(super) fn require_checkpoint(&self) -> Result<(), RunError> {
        match &self.persist {
            None => Err(RunError::NothingToContinue {
                reason: ContinueReason::NoCheckpointer {
                    needed_by: "continuing a thread",
                },
            }),
            Some(p) if p.parent.is_none() => Err(RunError::NothingToContinue {
                reason: ContinueReason::NoCheckpoint {
                    thread: p.thread.clone(),
                },
            }),
            Some(_) => Ok(()),
        }
    }

    /// Applies a resume command: answers go to the waiting tasks, its update is
    /// written, its destinations join the paused step.
    pub(super) async fn apply_command(&mut self, command: Command<S>) -> Result<(), RunError> {
        self.require_checkpoint()?;
        if let (Some(p), Some(resume)) = (&self.persist, &command.resume) {
            p.check_answers(resume)?;
        }
        let Command {
            update,
            goto,
            resume,
            ..
        } = command;
        // The update and destinations are saved as writes of a command task on the
        // paused checkpoint, so they survive this run pausing again.
        let command = NodeOutput {
            writes: update.into_iter().collect(),
            goto,
            parent: None,
        };
        if !command.writes.is_empty() || !command.goto.is_empty() {
            // Saved on the checkpoint it was given on, whatever the durability: a later
            // checkpoint already contains its effect.
            if let Some(p) = &self.persist {
                let task = format!("{COMMAND_TASK}:{}", p.commands);
                let writes = persist::encode_output(self.g, &task, &command)?;
                let at = p.at(p.parent.clone());
                p.saver.put_writes(&at, writes).await?;
            }
            if let Some(p) = &mut self.persist {
                p.commands += 1;
            }
            self.apply_command_output(command)?;
        }
        let Some(p) = &mut self.persist else {
            return Ok(());
        };
        let mut pending: Vec<(&String, &Interrupt)> = p.waiting.iter().collect();
        pending.sort_by(|a, b| a.0.cmp(b.0));
        let answered: Vec<(String, serde_json::Value)> = match resume {
            None => Vec::new(),
            Some(Resume::Invalid(reason)) => {
                return Err(RunError::UnserializableResume { reason });
            }
            // Nothing waiting but a step planned (a static breakpoint): the resume
            // just continues.
            Some(_) if pending.is_empty() && !self.next.is_empty() => Vec::new(),
            Some(Resume::Value(value)) => match pending.as_slice() {
                // A finished thread: nothing to answer, nothing to run (as in
                // LangGraph), so resuming twice is harmless.
                [] => Vec::new(),
                [(task, _)] => vec![((*task).clone(), value)],
                many => {
                    return Err(RunError::AmbiguousResume {
                        ids: many.iter().map(|(_, i)| i.id.clone()).collect(),
                    });
                }
            },
            Some(Resume::Map(map)) => {
                let mut out = Vec::new();
                for (id, value) in map {
                    let task = pending
                        .iter()
                        .find(|(_, i)| i.id == id)
                        .map(|(t, _)| (*t).clone())
                        .ok_or(RunError::UnknownInterrupt { id })?;
                    out.push((task, value));
                }
                out
            }
        };
        for (task, value) in answered {
            p.waiting.remove(&task);
            p.answers.entry(task).or_default().push(value);
        }
        Ok(())
    }

    pub(super) async fn apply_input(&mut self, update: S::Update) -> Result<(), RunError> {
        self.input_applied = true;
        self.next.clear();
        let changes = self
            .state
            .apply_writes(vec![Write::new(INPUT_WRITER, update)])
            .map_err(|source| RunError::InvalidUpdate { step: None, source })?;
        self.record(&changes);
        self.next.from(|| "START".into());
        for &t in &self.g.start_edges {
            self.next.pull(t);
        }
        for b in &self.g.start_branches {
            follow_route(self.g, b, &self.state, "START", &mut self.next)?;
        }
        if let Some(em) = &self.emitter {
            events::values(em, self.step, &self.state).await;
        }
        if self
            .persist
            .as_ref()
            .is_some_and(|p| p.durability != config::Durability::Exit)
        {
            self.save(CheckpointSource::Input).await?;
        }
        self.step = self.step.saturating_add(1);
        Ok(())
    }

    /// The node that wrote in the last step, if exactly one did.
    pub(super) fn last_writer(&self) -> Result<Option<usize>, RunError> {
        let Some(p) = &self.persist else {
            return Ok(None);
        };
        let mut writers = p.last_writers.clone();
        writers.sort();
        writers.dedup();
        match writers.as_slice() {
            [] => Ok(None),
            [one] => Ok(self.g.index.get(&**one).copied()),
            _ => Err(RunError::AmbiguousUpdate {
                candidates: writers.iter().map(ToString::to_string).collect(),
            }),
        }
    }

    /// Applies `update` as written by `writer` (or as input) and plans what follows.
    pub(super) fn apply_as(&mut self, writer: Writer, update: S::Update) -> Result<(), RunError> {
        let g = self.g;
        let name: Arc<str> = match writer {
            Writer::Node(i) => g.nodes[i].name.clone(),
            Writer::Input => Arc::from(INPUT_WRITER),
            Writer::End => Arc::from(END_WRITER),
        };
        let changes = self
            .state
            .apply_writes(vec![Write::new(name.clone(), update)])
            .map_err(|source| RunError::InvalidUpdate { step: None, source })?;
        self.record(&changes);
        self.next.clear();
        match writer {
            // Nothing is next: the thread has ended.
            Writer::End => {}
            Writer::Input => {
                for &t in &g.start_edges {
                    self.next.pull(t);
                }
                for b in &g.start_branches {
                    follow_route(g, b, &self.state, "START", &mut self.next)?;
                }
            }
            Writer::Node(i) => {
                let node = &g.nodes[i];
                self.next.from(|| node.name.to_string());
                for &t in &node.edges {
                    self.next.pull(t);
                }
                for &j in &node.joins {
                    if let Some(pos) = g.joins[j].sources.iter().position(|&s| s == i) {
                        self.barriers[j][pos] = true;
                    }
                }
                self.next.from(|| format!("branch:{}", node.name));
                for b in &node.branches {
                    follow_route(g, b, &self.state, &node.name, &mut self.next)?;
                }
                for (j, seen) in self.barriers.iter_mut().enumerate() {
                    if seen.iter().all(|&s| s) {
                        if let Some(t) = g.joins[j].target {
                            self.next.pull(t);
                        }
                        seen.iter_mut().for_each(|s| *s = false);
                    }
                }
                self.versions_seen.insert(
                    node.name.to_string(),
                    persist::version_map::<S>(&self.versions),
                );
            }
        }
        Ok(())
    }

    pub(super) fn record(&mut self, changes: &ChangeSet) {
        for (index, _) in changes.iter() {
            self.versions[index] = self.versions[index].saturating_add(1);
        }
        if let Some(p) = &mut self.persist {
            p.unsaved.merge(changes);
            p.dirty = true;
        }
    }
}
