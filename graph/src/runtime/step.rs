//! One superstep (LangGraph's `tick`/`after_tick`): name the planned tasks, reuse
//! what is already known of them, run the rest, then commit their writes and plan
//! the next step — or report the step paused or failed without committing it.
//!
//! This file only orchestrates: the pure parts are in `algo`, task execution in
//! `tasks`, events in `events`, saved writes in `restore`, records in `save`.

use super::algo::{self, RouterViews};
use super::caching::{self, Probe};
use super::error::RunError;
use super::events;
use super::frontier::Task;
use super::persist;
use super::run_loop::{Loop, StepEnd};
use super::runner::{self, Marks, Outcome, StepTasks};
use super::writer::PersistSink;
use crate::checkpoint::TaskRecord;
use crate::node::NodeOutput;
use crate::state::GraphState;
use crate::stream::Emitter;
use std::collections::BTreeMap;

/// A committed step between its stages: what is applied, and what is still to be
/// recorded, reported and routed.
struct Committed<S: GraphState> {
    /// Outputs with their updates taken out; the `goto`s stay for planning.
    outputs: Vec<NodeOutput<S>>,
    /// Per task, its own updates, when routers need views of their own.
    own: Vec<Vec<S::Update>>,
    pre_step: Option<S>,
    /// The updates per task, for the stream (only when it reports them).
    streamed: Option<Vec<Vec<S::Update>>>,
    history: Option<Vec<TaskRecord>>,
    seen_before: Option<BTreeMap<String, u64>>,
    cache_records: Vec<caching::Pending>,
}

impl<'g, S: GraphState> Loop<'g, S> {
    /// Runs `tasks` as one superstep. Every `.await` is here, at the top: the
    /// stages between them are plain functions, so an unstreamed, uncached run
    /// builds no future it does not poll.
    pub(super) async fn superstep(&mut self, tasks: &[Task]) -> Result<StepEnd<S>, RunError> {
        let g = self.g;
        let step = usize::try_from(self.step).unwrap_or(0);
        let reruns = self.persist.as_ref().map_or(0, |p| p.reruns);
        let names = tasks
            .iter()
            .map(|t| (&*g.nodes[t.node].name, t.payload.is_some()));
        let ids = algo::task_ids(self.step, reruns, names);
        let keys = self.task_keys(&ids);
        let (mut known, resume, answers) = self.known_tasks(&ids, tasks.len())?;
        if !answers.is_empty() {
            self.save_answers(answers).await?;
        }
        let mut probes = Vec::new();
        if let Some(cache) = self.cache_probe(tasks) {
            probes = caching::lookup(g, cache.0, cache.1, tasks, &mut known).await?;
        }
        let hits = probes.iter().map(|p| p.as_ref().is_some_and(Probe::is_hit));
        let marks = Marks::new(hits.collect(), &known);
        if let Some(em) = &self.emitter {
            events::task_starts(em, g, self.step, tasks, &ids, &marks).await;
        }
        let step_tasks = StepTasks {
            tasks,
            keys: &keys,
            resume: &resume,
            known,
            custom: self.emitter.as_ref().and_then(Emitter::live_sink),
            no_resume: self.no_answers.clone(),
            scope: self.scope(tasks, &keys),
            store: self.store(),
        };
        let (state, config) = (&self.state, self.config);
        let mut outcome = match &mut self.persist {
            Some(p) => {
                let mut sink = PersistSink {
                    g,
                    ids: &ids,
                    answered: &resume,
                    p,
                };
                runner::execute(g, step_tasks, state, step, config, Some(&mut sink)).await?
            }
            None => runner::execute(g, step_tasks, state, step, config, None).await?,
        };
        if let Some(em) = &self.emitter
            && (outcome.failure.is_some() || !outcome.interrupts.is_empty())
        {
            events::unfinished_results(em, g, self.step, tasks, &ids, &outcome, &marks).await;
        }
        if let Some((_, error)) = outcome.failure.take() {
            return Err(error);
        }
        if !outcome.interrupts.is_empty() {
            return self.paused_step(tasks, outcome, step);
        }
        let mut done = self.apply_step(tasks, &ids, outcome, probes, &marks, step)?;
        if let Some(store) = &g.cache
            && !done.cache_records.is_empty()
        {
            let records = std::mem::take(&mut done.cache_records);
            caching::store(&**store, &self.versions, records).await?;
        }
        if let (Some(em), Some(p)) = (&self.emitter, &mut self.persist)
            && !p.held.is_empty()
            && !em.has_room(3 * tasks.len() + 2)
        {
            // The step's events may wait for the consumer, who may never read them
            // (a dropped stream ends the run there): the finished tasks' writes are
            // stored first, so the thread resumes without running them again.
            p.store_held().await?;
        }
        if let (Some(em), Some(updates)) = (&self.emitter, done.streamed.take()) {
            events::committed_results(em, g, self.step, tasks, &ids, updates, &marks).await;
        }
        self.plan_step(tasks, &mut done, step)?;
        if let Some(em) = &self.emitter {
            events::values(em, self.step, &self.state).await;
        }
        self.record_step(tasks, ids, done.history, done.seen_before);
        Ok(StepEnd::Committed)
    }

    /// The cache and what a lookup reads, when some task of the step is
    /// cache-enabled.
    #[inline]
    fn cache_probe<'a>(
        &'a self,
        tasks: &[Task],
    ) -> Option<(&'a dyn crate::cache::NodeCache, caching::Current<'a, S>)> {
        let g = self.g;
        let store = g.cache.as_deref()?;
        tasks
            .iter()
            .any(|t| g.nodes[t.node].cache.is_some())
            .then(|| {
                let current = caching::Current {
                    thread: self.config.thread_id.as_deref().unwrap_or_default(),
                    state: &self.state,
                    versions: &self.versions,
                };
                (store, current)
            })
    }

    /// Some task interrupted: the step is not committed; the run reports the values
    /// with the finished tasks' writes applied.
    #[inline]
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

    /// Applies the step's writes in task order, atomically, and prepares what is
    /// recorded of them (history, cache entries, the stream's copy).
    #[inline]
    fn apply_step(
        &mut self,
        tasks: &[Task],
        ids: &[String],
        outcome: Outcome<S>,
        probes: Vec<Option<Probe>>,
        marks: &Marks,
        step: usize,
    ) -> Result<Committed<S>, RunError> {
        let g = self.g;
        let streamed = self
            .emitter
            .as_ref()
            .and_then(|em| events::kept_updates(em, &outcome.outputs));
        let mut outputs: Vec<NodeOutput<S>> = outcome
            .outputs
            .into_iter()
            .map(|o| o.unwrap_or_else(NodeOutput::empty))
            .collect();
        let history = self.task_records(tasks, &outputs, &outcome.durations, marks);
        let own_views = algo::routers_need_own_views(g, tasks);
        let pre_step = own_views.then(|| self.state.clone());
        let seen_before = self
            .persist
            .is_some()
            .then(|| persist::version_map::<S>(&self.versions));
        let cache_records = if probes.is_empty() {
            Vec::new()
        } else {
            caching::prepare(g, &self.state, tasks, ids, &outputs, probes)?
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
        Ok(Committed {
            outputs,
            own,
            pre_step,
            streamed,
            history,
            seen_before,
            cache_records,
        })
    }

    /// Notes what each task saw, and plans the next step: edges, `goto`s, routes,
    /// then the joins that completed.
    #[inline]
    fn plan_step(
        &mut self,
        tasks: &[Task],
        done: &mut Committed<S>,
        step: usize,
    ) -> Result<(), RunError> {
        let g = self.g;
        if let Some(seen) = &done.seen_before {
            for task in tasks {
                self.versions_seen
                    .insert(String::from(&*g.nodes[task.node].name), seen.clone());
            }
        }
        let views = RouterViews {
            state: &self.state,
            pre_step: done.pre_step.as_ref(),
            own: &done.own,
            step,
        };
        let outputs = std::mem::take(&mut done.outputs);
        let history = &mut done.history;
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
        Ok(())
    }
}
