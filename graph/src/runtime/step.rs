//! One superstep: run the planned tasks, then commit their writes and plan the
//! next step — or report the step paused or failed without committing it.
use std::sync::Arc;

use super::algo::{follow_route, schedule, task_ids};
use super::error::RunError;
use super::frontier::Task;
use super::run_loop::{Loop, StepEnd};
use super::tasks::{Known, StepTasks};
use super::writer::PersistSink;
use super::{caching, config, persist, tasks};
use crate::checkpoint::{PendingWrite, StepRecord, TaskRecord};
use crate::node::{Interrupt, NodeOutput};
use crate::state::{GraphState, Write};
use crate::stream::{DebugKind, Emitter, StreamEvent, StreamMode};

impl<'g, S: GraphState> Loop<'g, S> {
    pub(super) async fn superstep(&mut self, tasks: &[Task]) -> Result<StepEnd<S>, RunError> {
        let g = self.g;
        let step = usize::try_from(self.step).unwrap_or(0);
        let ids = task_ids(
            self.step,
            self.persist.as_ref().map_or(0, |p| p.reruns),
            tasks
                .iter()
                .map(|t| (&*g.nodes[t.node].name, t.payload.is_some())),
        );

        // Tasks whose writes were saved before a crash or a sibling's failure are not
        // run again; their saved writes stand in for them. Tasks waiting on an
        // unanswered interrupt stay waiting.
        let keys: Vec<Arc<str>> = {
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
        };
        let mut known: Vec<Known<S>> = Vec::with_capacity(tasks.len());
        // Per task, when some task has answers (a task without an entry has none).
        let mut resume: Vec<Arc<[serde_json::Value]>> = Vec::new();
        if let Some(p) = &mut self.persist {
            let checkpoint = p.parent.as_deref().unwrap_or_default();
            let saved = std::mem::take(&mut p.resumed);
            let mut waiting = std::mem::take(&mut p.waiting);
            let answers = std::mem::take(&mut p.answers);
            if !answers.is_empty() {
                resume.reserve_exact(tasks.len());
            }
            let mut answer_writes = Vec::new();
            for id in &ids {
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
            // Answers are saved before the tasks run, so a later interrupt of the same
            // task keeps them (saving the same answer twice is a no-op).
            if !answer_writes.is_empty() {
                if p.parent.is_some() && p.durability != config::Durability::Exit {
                    let at = persist::config_at(&p.thread, p.parent.clone());
                    p.saver.put_writes(&at, answer_writes).await?;
                } else {
                    p.buffered.extend(answer_writes);
                }
            }
        } else {
            known.resize_with(tasks.len(), || Known::Run);
        }
        let probes = match &g.cache {
            Some(store) if tasks.iter().any(|t| g.nodes[t.node].cache.is_some()) => {
                let thread = self.config.thread_id.as_deref().unwrap_or_default();
                let current = caching::Current {
                    thread,
                    state: &self.state,
                    versions: &self.versions,
                };
                caching::lookup(g, &**store, current, tasks, &mut known).await?
            }
            _ => Vec::new(),
        };
        // Empty (no allocation) when no task of the step is cache-enabled.
        let hits: Vec<bool> = probes
            .iter()
            .map(|p| p.as_ref().is_some_and(caching::Probe::is_hit))
            .collect();
        let cached = |i: usize| hits.get(i).copied().unwrap_or(false);
        // Empty (no allocation) when no task's writes were reused.
        let resumed: Vec<bool> = if known.iter().any(|k| matches!(k, Known::Output(_))) {
            known
                .iter()
                .map(|k| matches!(k, Known::Output(_)))
                .collect()
        } else {
            Vec::new()
        };
        let resumed = |i: usize| resumed.get(i).copied().unwrap_or(false);
        if let Some(em) = &self.emitter {
            for (i, (task, id)) in tasks.iter().zip(&ids).enumerate() {
                let node = g.nodes[task.node].name.to_string();
                let input = match &task.payload {
                    Some(p) => {
                        let send = crate::node::Send::<S>::from_parts(
                            g.nodes[task.node].name.clone(),
                            p.clone(),
                        );
                        persist::encode_payload(g, &send).ok()
                    }
                    None => None,
                };
                let triggers: Vec<String> = task.triggers.iter().map(ToString::to_string).collect();
                em.send_with_debug(self.step, DebugKind::Task, || StreamEvent::TaskStart {
                    step: self.step,
                    id: id.clone(),
                    node: node.clone(),
                    input: input.clone(),
                    triggers: triggers.clone(),
                    cached: cached(i),
                })
                .await;
            }
        }
        let step_tasks = StepTasks {
            tasks,
            keys: &keys,
            resume: &resume,
            known,
            custom: self.emitter.as_ref().and_then(Emitter::custom_sink),
            no_resume: self.no_answers.clone(),
        };
        let executed = match &mut self.persist {
            Some(p) => {
                let mut sink = PersistSink {
                    g,
                    ids: &ids,
                    answered: &resume,
                    p,
                };
                tasks::execute(
                    g,
                    step_tasks,
                    &self.state,
                    step,
                    self.config,
                    Some(&mut sink),
                )
                .await
            }
            None => tasks::execute(g, step_tasks, &self.state, step, self.config, None).await,
        };
        let mut outcome = executed?;
        // A paused or failed step is not committed: every task that ended gets its
        // result event (no updates event), in task order.
        if let Some(em) = &self.emitter
            && (outcome.failure.is_some() || !outcome.interrupts.is_empty())
        {
            for (i, (task, id)) in tasks.iter().zip(&ids).enumerate() {
                let interrupts: Vec<Interrupt> = outcome
                    .interrupts
                    .iter()
                    .filter(|(j, _)| *j == i)
                    .map(|(_, int)| int.clone())
                    .collect();
                let error = match &outcome.failure {
                    Some((j, RunError::Node { source, .. })) if *j == i => Some(source.to_string()),
                    _ => None,
                };
                let Some(result) = outcome.outputs[i]
                    .as_ref()
                    .map(|o| o.writes.clone())
                    .or_else(|| (error.is_some() || !interrupts.is_empty()).then(Vec::new))
                else {
                    continue;
                };
                let node = g.nodes[task.node].name.to_string();
                em.send_with_debug(self.step, DebugKind::TaskResult, || {
                    StreamEvent::TaskResult {
                        step: self.step,
                        id: id.clone(),
                        node: node.clone(),
                        error: error.clone(),
                        result: result.clone(),
                        interrupts: interrupts.clone(),
                        resumed: resumed(i),
                        cached: cached(i),
                    }
                })
                .await;
            }
        }
        if let Some((_, error)) = outcome.failure.take() {
            return Err(error);
        }
        // Kept for the update and result events sent once the step's writes apply.
        let streamed: Option<Vec<Vec<S::Update>>> = self
            .emitter
            .as_ref()
            .filter(|em| em.wants(StreamMode::UPDATES | StreamMode::TASKS | StreamMode::DEBUG))
            .map(|_| {
                outcome
                    .outputs
                    .iter()
                    .map(|o| o.as_ref().map(|o| o.writes.clone()).unwrap_or_default())
                    .collect()
            });
        let durations = outcome.durations;
        if !outcome.interrupts.is_empty() {
            // The step is not committed; report the values with the finished tasks'
            // writes applied.
            let mut values = self.state.clone();
            let writes: Vec<Write<S>> = tasks
                .iter()
                .zip(&outcome.outputs)
                .filter_map(|(t, out)| out.as_ref().map(|o| (t, o)))
                .flat_map(|(t, o)| {
                    let name = g.nodes[t.node].name.clone();
                    o.writes
                        .iter()
                        .cloned()
                        .map(move |u| Write::new(name.clone(), u))
                })
                .collect();
            values
                .apply_writes(writes)
                .map_err(|source| RunError::InvalidUpdate {
                    step: Some(step),
                    source,
                })?;
            let interrupts = outcome.interrupts.into_iter().map(|(_, i)| i).collect();
            let refused = outcome.refused.map(|r| Box::new(r.1));
            return Ok(StepEnd::Paused(values, interrupts, refused));
        }
        let mut outputs: Vec<NodeOutput<S>> = outcome
            .outputs
            .into_iter()
            .map(|o| o.unwrap_or_else(NodeOutput::empty))
            .collect();
        let mut history: Option<Vec<TaskRecord>> = self.persist.is_some().then(|| {
            tasks
                .iter()
                .zip(&outputs)
                .enumerate()
                .map(|(i, (t, out))| TaskRecord {
                    // Filled in at the end of the step, when the ids are no longer
                    // needed: moved instead of copied.
                    id: String::new(),
                    node: String::from(&*g.nodes[t.node].name),
                    duration_us: u64::try_from(durations[i].as_micros()).unwrap_or(u64::MAX),
                    wrote: !out.writes.is_empty(),
                    resumed: resumed(i),
                    cached: cached(i),
                    routed_to: Vec::new(),
                })
                .collect()
        });

        // A router sees the pre-step state plus its own task's writes. With one task
        // that is the post-step state; otherwise each routing task gets its own view.
        let fresh_views =
            tasks.len() > 1 && tasks.iter().any(|t| !g.nodes[t.node].branches.is_empty());
        let pre_step = fresh_views.then(|| self.state.clone());
        let seen_before =
            (self.persist.is_some()).then(|| persist::version_map::<S>(&self.versions));

        let cache_records = if probes.is_empty() {
            Vec::new()
        } else {
            caching::prepare(g, &self.state, tasks, &ids, &outputs, probes)?
        };
        let mut writes = Vec::with_capacity(tasks.len());
        let mut own_writes: Vec<Vec<S::Update>> = Vec::new();
        // The updates are taken out here; the gotos stay in `outputs` for planning.
        for (task, out) in tasks.iter().zip(&mut outputs) {
            let updates = std::mem::take(&mut out.writes);
            let writer = &g.nodes[task.node].name;
            if fresh_views {
                own_writes.push(updates.clone());
            }
            writes.extend(updates.into_iter().map(|u| Write {
                writer: writer.clone(),
                update: u,
            }));
        }
        let changes =
            self.state
                .apply_writes(writes)
                .map_err(|source| RunError::InvalidUpdate {
                    step: Some(step),
                    source,
                })?;
        self.record(&changes);
        if let Some(store) = &g.cache
            && !cache_records.is_empty()
        {
            caching::store(&**store, &self.versions, cache_records).await?;
        }
        if let (Some(em), Some(streamed)) = (&self.emitter, streamed) {
            for (i, ((task, id), updates)) in tasks.iter().zip(&ids).zip(streamed).enumerate() {
                let node = g.nodes[task.node].name.to_string();
                if em.wants(StreamMode::UPDATES) {
                    em.send(StreamEvent::Updates {
                        step: self.step,
                        node: node.clone(),
                        updates: updates.clone(),
                        cached: cached(i),
                    })
                    .await;
                }
                em.send_with_debug(self.step, DebugKind::TaskResult, || {
                    StreamEvent::TaskResult {
                        step: self.step,
                        id: id.clone(),
                        node: node.clone(),
                        error: None,
                        result: updates.clone(),
                        interrupts: Vec::new(),
                        resumed: resumed(i),
                        cached: cached(i),
                    }
                })
                .await;
            }
        }
        if let Some(seen) = &seen_before {
            for task in tasks {
                self.versions_seen
                    .insert(String::from(&*g.nodes[task.node].name), seen.clone());
            }
        }

        for (i, (task, NodeOutput { goto, .. })) in tasks.iter().zip(outputs).enumerate() {
            let node = &g.nodes[task.node];
            self.next.from(|| node.name.to_string());
            for &t in &node.edges {
                self.next.pull(t);
            }
            for &j in &node.joins {
                if let Some(pos) = g.joins[j].sources.iter().position(|&s| s == task.node) {
                    self.barriers[j][pos] = true;
                }
            }
            // A node's own `goto` is emitted before its routers run, so its Sends come first.
            self.next.from(|| format!("goto:{}", node.name));
            for target in goto {
                schedule(g, target, &node.name, &mut self.next)?;
            }
            if !node.branches.is_empty() {
                let view = match (&pre_step, own_writes.get(i)) {
                    (Some(pre), Some(own)) => {
                        let mut view = pre.clone();
                        let own = own
                            .iter()
                            .cloned()
                            .map(|u| Write {
                                writer: node.name.clone(),
                                update: u,
                            })
                            .collect();
                        view.apply_writes(own)
                            .map_err(|source| RunError::InvalidUpdate {
                                step: Some(step),
                                source,
                            })?;
                        Some(view)
                    }
                    _ => None,
                };
                self.next.from(|| format!("branch:{}", node.name));
                for b in &node.branches {
                    let chosen = follow_route(
                        g,
                        b,
                        view.as_ref().unwrap_or(&self.state),
                        &node.name,
                        &mut self.next,
                    )?;
                    if let Some(record) = history.as_mut().and_then(|h| h.get_mut(i)) {
                        record.routed_to.extend(chosen);
                    }
                }
            }
        }
        for (j, seen) in self.barriers.iter_mut().enumerate() {
            if seen.iter().all(|&s| s) {
                self.next.from(|| {
                    let names: Vec<&str> = g.joins[j]
                        .sources
                        .iter()
                        .map(|&s| &*g.nodes[s].name)
                        .collect();
                    format!("join:{}", names.join("+"))
                });
                if let Some(t) = g.joins[j].target {
                    self.next.pull(t);
                }
                seen.iter_mut().for_each(|s| *s = false);
            }
        }
        if let Some(em) = &self.emitter
            && em.wants(StreamMode::VALUES)
        {
            em.send(StreamEvent::Values {
                step: self.step,
                values: self.state.clone(),
            })
            .await;
        }
        if let (Some(p), Some(history), Some(seen)) = (&mut self.persist, history, seen_before) {
            // Refilled in place: the buffer is reused from step to step.
            p.last_writers.clear();
            p.last_writers.extend(
                tasks
                    .iter()
                    .zip(&history)
                    .filter(|(_, r)| r.wrote)
                    .map(|(t, _)| g.nodes[t.node].name.clone()),
            );
            let mut history = history;
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
        Ok(StepEnd::Committed)
    }
}
