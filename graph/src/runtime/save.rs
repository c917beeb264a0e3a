//! Saving the loop: the history of committed steps, checkpoints, the end of a
//! run, and the record of a rejected step.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::algo::task_ids;
use super::error::RunError;
use super::events::CheckpointEvent;
use super::frontier::Task;
use super::run_loop::Loop;
use super::runner::Marks;
use super::writer::lock_queue;
use super::{config, persist};
use crate::checkpoint::{
    CHECKPOINT_FORMAT, Checkpoint, CheckpointMetadata, CheckpointSource, GRAPH_SHAPE_KEY,
    PendingWrite, PlannedTask, SaveOp, StepRecord, TaskRecord, new_checkpoint_id,
};
use crate::node::NodeOutput;
use crate::state::GraphState;

impl<'g, S: GraphState> Loop<'g, S> {
    pub(super) fn planned(&self) -> Result<Vec<PlannedTask>, RunError> {
        // Sized exactly: the list is kept with every checkpoint.
        let mut planned = Vec::with_capacity(self.next.len());
        for (node, payload) in self.next.planned() {
            let name = self.g.nodes[node].name.clone();
            let payload = match payload {
                Some(p) => {
                    let send = crate::node::Send::<S>::from_parts(name.clone(), p);
                    Some(persist::encode_payload(self.g, &send)?)
                }
                None => None,
            };
            planned.push(PlannedTask {
                node: String::from(&*name),
                payload,
            });
        }
        Ok(planned)
    }

    pub(super) fn barrier_map(&self) -> BTreeMap<usize, Vec<String>> {
        self.barriers
            .iter()
            .enumerate()
            .filter(|(_, seen)| seen.iter().any(|&s| s))
            .map(|(j, seen)| {
                let names = self.g.joins[j]
                    .sources
                    .iter()
                    .zip(seen)
                    .filter(|(_, s)| **s)
                    .map(|(&n, _)| self.g.nodes[n].name.to_string())
                    .collect();
                (j, names)
            })
            .collect()
    }

    /// Writes a checkpoint of the current state and frontier.
    pub(super) async fn save(&mut self, source: CheckpointSource) -> Result<(), RunError> {
        let next = self.planned()?;
        let barriers = self.barrier_map();
        let Some(p) = &mut self.persist else {
            return Ok(());
        };
        let id = new_checkpoint_id();
        p.dirty = false;
        let values = persist::stored_values(
            &self.state,
            &p.unsaved,
            &self.versions,
            &mut self.bases,
            &id,
        )?;
        let updated = p
            .unsaved
            .iter()
            .map(|(i, _)| S::CHANNELS[i].name.to_string())
            .collect();
        // Cleared, not replaced: its buffer serves the next checkpoint.
        p.unsaved.clear();
        let checkpoint = Checkpoint {
            v: CHECKPOINT_FORMAT,
            id: id.clone(),
            ts: crate::checkpoint::now_rfc3339(),
            channel_values: values,
            channel_versions: persist::version_map::<S>(&self.versions),
            versions_seen: std::mem::take(&mut self.versions_seen),
            updated_channels: updated,
            channel_bases: persist::base_map::<S>(&self.bases),
            next,
            barriers,
            schema_version: self.g.schema_version.clone(),
            graph_version: self.g.version.clone(),
        };
        // A loop checkpoint records the step that just ran; the others the step they
        // stand for (the input of a fresh thread is step -1).
        let step = match source {
            CheckpointSource::Loop => self.step.saturating_sub(1),
            _ => self.step,
        };
        let mut metadata = CheckpointMetadata::new(source, step);
        // `update_state` writes are not runs: they keep no run's id or metadata.
        if source != CheckpointSource::Update {
            metadata.run_id.clone_from(&self.config.run_id);
            metadata.extra.extend(
                self.config
                    .extra
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone())),
            );
        }
        metadata.steps = std::mem::take(&mut p.history);
        if p.shape_due {
            // The first checkpoint of this graph version in the thread: what lets a
            // tool without the graph's code draw it.
            let shape = crate::shape_json::recorded(self.g).clone();
            metadata.extra.insert(GRAPH_SHAPE_KEY.to_string(), shape);
            p.shape_due = false;
        }
        if let Some(parent) = &p.parent {
            metadata.parents.insert(String::new(), parent.clone());
        }
        let previous = p.parent.replace(id);
        let parent = p.at(previous);
        let event = CheckpointEvent::capture(
            self.emitter.as_ref(),
            || p.at(Some(checkpoint.id.clone())),
            &parent,
            &metadata,
            || {
                let g = self.g;
                self.next
                    .due()
                    .map(|(n, _)| g.nodes[n].name.to_string())
                    .collect()
            },
        );
        if p.durability == config::Durability::Async {
            p.enqueue_bounded(SaveOp::Checkpoint {
                config: parent,
                checkpoint,
                metadata,
            })
            .await?;
        } else if let Some(writes) = p.take_held(&parent) {
            // The step's last task's writes and its checkpoint: one transaction.
            let save = SaveOp::Checkpoint {
                config: parent,
                checkpoint,
                metadata,
            };
            p.saver.put_batch(vec![writes, save]).await?;
        } else {
            p.saver.put(&parent, checkpoint, metadata).await?;
        }
        if let (Some(event), Some(em)) = (event, &self.emitter) {
            event.send(em, step, &self.state).await;
        }
        if source == CheckpointSource::Fork {
            self.step = self.step.saturating_add(1);
        }
        Ok(())
    }

    /// At the end of a run (or at its limit): the last checkpoint is saved, and
    /// background saves are awaited.
    pub(super) async fn finish(&mut self) -> Result<(), RunError> {
        let Some(p) = &mut self.persist else {
            return Ok(());
        };
        if p.durability == config::Durability::Exit && p.dirty {
            // Nothing ran since the input: the checkpoint stands for the input.
            let source = if self.steps_run == 0 && self.input_applied {
                CheckpointSource::Input
            } else {
                CheckpointSource::Loop
            };
            if source == CheckpointSource::Input {
                self.step = self.step.saturating_sub(1);
            }
            self.save(source).await?;
            if source == CheckpointSource::Input {
                self.step = self.step.saturating_add(1);
            }
        }
        if let Some(p) = &mut self.persist {
            p.flush().await?;
            let last = lock_queue(&p.queue).last_batch;
            self.g.save_batch_hint.store(last, Ordering::Relaxed);
        }
        Ok(())
    }

    /// After the writes of `tasks` were rejected: the checkpoint records the rejected
    /// attempt, so a continue runs every task of the step again under new ids (the
    /// saved writes of this attempt are never applied), and each new task carries
    /// the rejection as its error until it runs.
    pub(super) async fn reject_step(
        &mut self,
        tasks: &[Task],
        error: &RunError,
    ) -> Result<(), RunError> {
        let g = self.g;
        let Some(p) = &mut self.persist else {
            return Ok(());
        };
        let message = serde_json::Value::String(error.to_string());
        // Held back writes (`Exit`) are this step's: they are dropped.
        p.buffered.clear();
        let attempt = p.reruns;
        let rerun_ids = task_ids(
            self.step,
            attempt.saturating_add(1),
            tasks
                .iter()
                .map(|t| (&*g.nodes[t.node].name, t.payload.is_some())),
        );
        let mut writes = Vec::with_capacity(rerun_ids.len() + 1);
        writes.push(PendingWrite {
            task_id: persist::WRITE_REJECTED.to_string(),
            idx: attempt,
            channel: persist::WRITE_REJECTED.to_string(),
            value: message.clone(),
        });
        writes.extend(rerun_ids.into_iter().map(|task_id| PendingWrite {
            task_id,
            idx: persist::IDX_ERROR,
            channel: persist::WRITE_ERROR.to_string(),
            value: message.clone(),
        }));
        p.save_writes(writes).await?;
        p.reruns = attempt.saturating_add(1);
        Ok(())
    }

    /// After a run failed mid-step with its state no longer the pre-step one: the
    /// saves already handed to the background saver land before the run returns
    /// (nothing new is saved). A failing save is logged: the run's own error is the
    /// one returned.
    pub(super) async fn abandon(&mut self) {
        if let Some(p) = &mut self.persist
            && let Err(e) = p.flush().await
        {
            tracing::warn!(error = %e, "a background checkpoint save failed after the run failed");
        }
    }

    /// After a node failed: with `Exit` durability, the checkpoint and the finished
    /// siblings' writes are saved now.
    pub(super) async fn finish_failed(&mut self) -> Result<(), RunError> {
        self.finish().await?;
        if let Some(p) = &mut self.persist
            && !p.buffered.is_empty()
        {
            let at = p.at(p.parent.clone());
            let writes = std::mem::take(&mut p.buffered);
            p.saver.put_writes(&at, writes).await?;
        }
        Ok(())
    }
}

impl<S: GraphState> Loop<'_, S> {
    /// The history records of a committed step's tasks (with a checkpointer only).
    /// Ids are filled in by [`Loop::record_step`], once they are no longer needed:
    /// moved instead of copied.
    #[inline]
    pub(super) fn task_records(
        &self,
        tasks: &[Task],
        outputs: &[NodeOutput<S>],
        durations: &[Duration],
        marks: &Marks,
    ) -> Option<Vec<TaskRecord>> {
        self.persist.is_some().then(|| {
            tasks
                .iter()
                .zip(outputs)
                .enumerate()
                .map(|(i, (t, out))| TaskRecord {
                    id: String::new(),
                    node: String::from(&*self.g.nodes[t.node].name),
                    duration_us: u64::try_from(durations[i].as_micros()).unwrap_or(u64::MAX),
                    wrote: !out.writes.is_empty(),
                    resumed: marks.resumed(i),
                    cached: marks.cached(i),
                    routed_to: Vec::new(),
                })
                .collect()
        })
    }

    /// Adds a committed step to the history the next checkpoint stores, and notes
    /// which tasks wrote (for `update_state` without a node).
    #[inline]
    pub(super) fn record_step(
        &mut self,
        tasks: &[Task],
        ids: Vec<String>,
        history: Option<Vec<TaskRecord>>,
        seen: Option<BTreeMap<String, u64>>,
    ) {
        let g = self.g;
        let (Some(p), Some(mut history), Some(seen)) = (&mut self.persist, history, seen) else {
            return;
        };
        // Refilled in place: the buffer is reused from step to step.
        p.last_writers.clear();
        p.last_writers.extend(
            tasks
                .iter()
                .zip(&history)
                .filter(|(_, r)| r.wrote)
                .map(|(t, _)| g.nodes[t.node].name.clone()),
        );
        for (record, id) in history.iter_mut().zip(ids) {
            record.id = id;
        }
        // Usually one record per checkpoint: no room reserved for more.
        if p.history.is_empty() {
            p.history.reserve_exact(1);
        }
        p.history.push(StepRecord {
            step: self.step,
            input_versions: seen,
            tasks: history,
        });
    }
}
