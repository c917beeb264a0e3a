//! One superstep (LangGraph's `tick`/`after_tick`): name the planned tasks, reuse
//! what is already known of them, run the rest, then commit their writes and plan
//! the next step — or report the step paused or failed without committing it.
//!
//! This file only orchestrates: the pure parts are in `algo`, task execution in
//! `tasks`, events in `events`, saved writes in `restore`, records in `save`.

use std::sync::Arc;

use super::algo::{self, RouterViews};
use super::caching::{self, Probe};
use super::error::RunError;
use super::events;
use super::frontier::Task;
use super::persist;
use super::run_loop::{Loop, StepEnd};
use super::runner::{self, Known, Marks, Outcome, StepTasks};
use super::writer::PersistSink;
use crate::node::NodeOutput;
use crate::state::GraphState;
use crate::stream::Emitter;

impl<'g, S: GraphState> Loop<'g, S> {
    /// Runs `tasks` as one superstep.
    pub(super) async fn superstep(&mut self, tasks: &[Task]) -> Result<StepEnd<S>, RunError> {
        let g = self.g;
        let step = usize::try_from(self.step).unwrap_or(0);
        let reruns = self.persist.as_ref().map_or(0, |p| p.reruns);
        let ids = algo::task_ids(
            self.step,
            reruns,
            tasks
                .iter()
                .map(|t| (&*g.nodes[t.node].name, t.payload.is_some())),
        );
        let keys = self.task_keys(&ids);
        let (mut known, resume) = self.known_tasks(&ids, tasks.len()).await?;
        let probes = self.probe_cache(tasks, &mut known).await?;
        let hits = probes
            .iter()
            .map(|p| p.as_ref().is_some_and(Probe::is_hit))
            .collect();
        let marks = Marks::new(hits, &known);
        let em = self.emitter.as_ref();
        events::task_starts(em, g, self.step, tasks, &ids, &marks).await;
        let step_tasks = StepTasks {
            tasks,
            keys: &keys,
            resume: &resume,
            known,
            custom: em.and_then(Emitter::custom_sink),
            no_resume: self.no_answers.clone(),
        };
        let mut outcome = self.run_tasks(step_tasks, &ids, &resume, step).await?;
        if outcome.failure.is_some() || !outcome.interrupts.is_empty() {
            let em = self.emitter.as_ref();
            events::unfinished_results(em, g, self.step, tasks, &ids, &outcome, &marks).await;
        }
        if let Some((_, error)) = outcome.failure.take() {
            return Err(error);
        }
        if !outcome.interrupts.is_empty() {
            return self.paused_step(tasks, outcome, step);
        }
        self.commit(tasks, ids, outcome, probes, &marks, step)
            .await?;
        Ok(StepEnd::Committed)
    }

    /// Looks the step's cache-enabled tasks up (none: no allocation).
    async fn probe_cache(
        &self,
        tasks: &[Task],
        known: &mut [Known<S>],
    ) -> Result<Vec<Option<Probe>>, RunError> {
        let g = self.g;
        match &g.cache {
            Some(store) if tasks.iter().any(|t| g.nodes[t.node].cache.is_some()) => {
                let current = caching::Current {
                    thread: self.config.thread_id.as_deref().unwrap_or_default(),
                    state: &self.state,
                    versions: &self.versions,
                };
                caching::lookup(g, &**store, current, tasks, known).await
            }
            _ => Ok(Vec::new()),
        }
    }

    /// Runs the tasks; with a checkpointer each finished task's writes are saved as
    /// it finishes.
    async fn run_tasks(
        &mut self,
        step_tasks: StepTasks<'_, S>,
        ids: &[String],
        answered: &[Arc<[serde_json::Value]>],
        step: usize,
    ) -> Result<Outcome<S>, RunError> {
        let g = self.g;
        match &mut self.persist {
            Some(p) => {
                let mut sink = PersistSink {
                    g,
                    ids,
                    answered,
                    p,
                };
                runner::execute(
                    g,
                    step_tasks,
                    &self.state,
                    step,
                    self.config,
                    Some(&mut sink),
                )
                .await
            }
            None => runner::execute(g, step_tasks, &self.state, step, self.config, None).await,
        }
    }

    /// Some task interrupted: the step is not committed; the run reports the values
    /// with the finished tasks' writes applied.
    fn paused_step(
        &self,
        tasks: &[Task],
        outcome: Outcome<S>,
        step: usize,
    ) -> Result<StepEnd<S>, RunError> {
        let mut values = self.state.clone();
        values
            .apply_writes(algo::finished_writes(self.g, tasks, &outcome.outputs))
            .map_err(|source| RunError::InvalidUpdate {
                step: Some(step),
                source,
            })?;
        let interrupts = outcome.interrupts.into_iter().map(|(_, i)| i).collect();
        let refused = outcome.refused.map(|r| Box::new(r.1));
        Ok(StepEnd::Paused(values, interrupts, refused))
    }

    /// Applies the step's writes in task order, records them (cache, history,
    /// events), and plans the next step.
    async fn commit(
        &mut self,
        tasks: &[Task],
        ids: Vec<String>,
        outcome: Outcome<S>,
        probes: Vec<Option<Probe>>,
        marks: &Marks,
        step: usize,
    ) -> Result<(), RunError> {
        let g = self.g;
        let streamed = events::kept_updates(self.emitter.as_ref(), &outcome.outputs);
        let mut outputs: Vec<NodeOutput<S>> = outcome
            .outputs
            .into_iter()
            .map(|o| o.unwrap_or_else(NodeOutput::empty))
            .collect();
        let mut history = self.task_records(tasks, &outputs, &outcome.durations, marks);
        let own_views = algo::routers_need_own_views(g, tasks);
        let pre_step = own_views.then(|| self.state.clone());
        let seen_before = self
            .persist
            .is_some()
            .then(|| persist::version_map::<S>(&self.versions));
        let cache_records = if probes.is_empty() {
            Vec::new()
        } else {
            caching::prepare(g, &self.state, tasks, &ids, &outputs, probes)?
        };
        let (writes, own) = algo::take_writes(g, tasks, &mut outputs, own_views);
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
        let em = self.emitter.as_ref();
        events::committed_results(em, g, self.step, tasks, &ids, streamed, marks).await;
        if let Some(seen) = &seen_before {
            for task in tasks {
                self.versions_seen
                    .insert(String::from(&*g.nodes[task.node].name), seen.clone());
            }
        }
        let views = RouterViews {
            state: &self.state,
            pre_step: pre_step.as_ref(),
            own: &own,
            step,
        };
        algo::plan_next(
            g,
            tasks,
            outputs,
            &views,
            &mut self.next,
            &mut self.barriers,
            |i, chosen| {
                if let Some(record) = history.as_mut().and_then(|h| h.get_mut(i)) {
                    record.routed_to.extend(chosen);
                }
            },
        )?;
        algo::fire_joins(g, &mut self.barriers, &mut self.next);
        events::values(self.emitter.as_ref(), self.step, &self.state).await;
        self.record_step(tasks, ids, history, seen_before);
        Ok(())
    }
}
