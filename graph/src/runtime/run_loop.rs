//! The run loop: opens a thread (locking and loading it), runs supersteps until the
//! frontier is empty, a breakpoint or an interrupt pauses it, or the recursion
//! limit is reached.
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use tracing::Instrument;

use super::config::{RunConfig, RunInput, RunOutput};
use super::error::RunError;
use super::frontier::{Frontier, Task};
use super::persist::{Bases, Versions};
use super::writer::{Persist, SaveQueue};
use super::{config, events, persist};
use crate::checkpoint::{CheckpointSaver, CheckpointSource, CheckpointTuple};
use crate::compile::Graph;
use crate::node::{Interrupt, interrupt_id};
use crate::state::{ChangeSet, GraphState};
use crate::stream::{Emitter, StreamMode};

/// The writer name of a run's input in error messages.
pub(super) const INPUT_WRITER: &str = "__input__";

/// The writer name of an update written as `END`, in error messages.
pub(super) const END_WRITER: &str = "__end__";

/// Task id prefix of resume commands saved on a paused checkpoint.
pub(super) use crate::checkpoint::writes::COMMAND_TASK;

pub(crate) struct Loop<'g, S: GraphState> {
    pub(super) g: &'g Graph<S>,
    /// The resume values of a task nobody answered: one shared empty list, so a
    /// step does not allocate one per task.
    pub(super) no_answers: Arc<[serde_json::Value]>,
    /// Scratch space for building task keys.
    pub(super) key_buf: String,
    pub(super) config: &'g RunConfig,
    pub(super) state: S,
    pub(super) versions: Versions,
    pub(super) bases: Bases,
    /// The channel versions each node saw when it ran, for the nodes that ran since
    /// the last saved checkpoint (each checkpoint stores only its own steps' entries).
    pub(super) versions_seen: BTreeMap<String, BTreeMap<String, u64>>,
    pub(super) next: Frontier,
    pub(super) barriers: Vec<Vec<bool>>,
    /// Number of the next superstep (the input is step -1 of a fresh thread).
    pub(super) step: i64,
    pub(super) steps_run: usize,
    pub(super) persist: Option<Persist>,
    /// Whether this run applied new input.
    pub(super) input_applied: bool,
    /// Where a streamed run's events go.
    pub(super) emitter: Option<Emitter<S>>,
    /// The first step of a run that continues a paused thread does not stop again at
    /// the `interrupt_before` breakpoint it paused on.
    pub(super) resuming: bool,
    /// A retried run found its own latest checkpoint: it continues from there
    /// instead of applying its input again.
    pub(super) retried: bool,
}

/// A run's own breakpoints must name nodes of its graph (as the compiled ones must):
/// checked before anything is loaded or saved.
fn check_breakpoints<S: GraphState>(g: &Graph<S>, config: &RunConfig) -> Result<(), RunError> {
    let unknown = config
        .interrupt_before
        .iter()
        .chain(&config.interrupt_after)
        .find(|name| !g.nodes.iter().any(|n| n.name == **name));
    match unknown {
        None => Ok(()),
        Some(name) => Err(RunError::UnknownInterruptNode {
            node: name.to_string(),
            known: g
                .nodes
                .iter()
                .map(|n| &*n.name)
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

/// How a superstep ended.
pub(super) enum StepEnd<S> {
    Committed,
    /// Tasks interrupted: the step is not committed; the values are the state with
    /// the finished tasks' writes applied. With an error, a resume value was refused
    /// (its interrupt is pending again): the run pauses, then fails with it.
    Paused(S, Vec<Interrupt>, Option<Box<RunError>>),
}

impl<'g, S: GraphState> Loop<'g, S> {
    pub(super) async fn start(
        g: &'g Graph<S>,
        config: &'g RunConfig,
        emitter: Option<Emitter<S>>,
    ) -> Result<Self, RunError> {
        check_breakpoints(g, config)?;
        Self::open(g, config, true, emitter).await
    }

    pub(super) async fn open(
        g: &'g Graph<S>,
        config: &'g RunConfig,
        fork: bool,
        emitter: Option<Emitter<S>>,
    ) -> Result<Self, RunError> {
        if config.recursion_limit == 0 {
            return Err(RunError::ZeroRecursionLimit);
        }
        let mut lp = Self::fresh(g, config);
        if emitter
            .as_ref()
            .is_some_and(|em| em.wants(StreamMode::TASKS | StreamMode::DEBUG))
        {
            lp.next.track();
        }
        lp.emitter = emitter;
        // A subgraph's run uses its parent's saver (or none) under its namespace; the
        // parent holds the thread's lock.
        let (saver, ns) = match &config.nested {
            Some(nested) => (nested.saver.as_ref(), nested.ns.as_str()),
            None => (g.saver.as_ref(), ""),
        };
        let Some(saver) = saver else {
            return Ok(lp);
        };
        let thread = config
            .thread_id
            .as_deref()
            .ok_or(RunError::MissingThreadId)?;
        // One writer per thread: held until the run (and its last save) is over.
        let lock = match &config.nested {
            Some(_) => None,
            None => Some(saver.lock_thread(thread, config.lock_timeout).await?),
        };
        let (tuple, at_checkpoint) = match lp.own_latest(saver.as_ref(), thread).await? {
            Some(own) => {
                lp.retried = true;
                (Some(own), None)
            }
            None => {
                let at = persist::config_in(thread, ns, config.checkpoint_id.clone());
                (saver.get_tuple(&at).await?, config.checkpoint_id.as_ref())
            }
        };
        // Under the lock: a racing starter that got here first has saved by now.
        if config.new_thread_only && tuple.is_some() {
            return Err(RunError::ThreadExists {
                thread: thread.to_string(),
            });
        }
        let saver = match (&config.lease, &config.nested) {
            (Some(lease), None) => Arc::new(super::lease::LeasedSaver {
                inner: saver.clone(),
                lease: lease.clone(),
            }),
            _ => saver.clone(),
        };
        lp.attach(saver, thread, ns);
        if let Some(p) = &mut lp.persist {
            p.lock = lock.map(Arc::new);
        }
        match (tuple, at_checkpoint) {
            (Some(t), at) => {
                lp.load(&t, at.is_some()).await?;
                if at.is_some() && fork {
                    lp.save(CheckpointSource::Fork).await?;
                }
            }
            (None, Some(id)) => {
                return Err(RunError::UnknownCheckpoint {
                    thread: thread.to_string(),
                    id: id.clone(),
                });
            }
            (None, None) => {}
        }
        Ok(lp)
    }

    /// For a retried run (see [`RunConfig::retry`]): the thread's latest checkpoint
    /// when this run's id wrote it.
    async fn own_latest(
        &self,
        saver: &dyn CheckpointSaver,
        thread: &str,
    ) -> Result<Option<CheckpointTuple>, RunError> {
        let (true, None, Some(run_id)) =
            (self.config.retry, &self.config.nested, &self.config.run_id)
        else {
            return Ok(None);
        };
        let latest = saver
            .get_tuple(&persist::config_in(thread, "", None))
            .await?;
        Ok(latest.filter(|t| t.metadata.run_id.as_deref() == Some(run_id.as_str())))
    }

    /// The loop a run continuing from `tuple` would start with (for `get_state`).
    pub(crate) async fn inspect(
        g: &'g Graph<S>,
        config: &'g RunConfig,
        saver: Arc<dyn CheckpointSaver>,
        tuple: &CheckpointTuple,
    ) -> Result<Self, RunError> {
        let mut lp = Self::fresh(g, config);
        lp.attach(saver, &tuple.config.thread_id, &tuple.config.checkpoint_ns);
        lp.load(tuple, false).await?;
        Ok(lp)
    }

    pub(super) fn fresh(g: &'g Graph<S>, config: &'g RunConfig) -> Self {
        Loop {
            g,
            config,
            state: S::default(),
            versions: vec![0; S::CHANNELS.len()],
            bases: vec![None; S::CHANNELS.len()],
            versions_seen: BTreeMap::new(),
            no_answers: Arc::from(Vec::new()),
            key_buf: String::new(),
            next: {
                let mut next = Frontier::new(g.nodes.len());
                next.defer(g.deferred.clone());
                next
            },
            barriers: g
                .joins
                .iter()
                .map(|j| vec![false; j.sources.len()])
                .collect(),
            step: -1,
            steps_run: 0,
            persist: None,
            input_applied: false,
            emitter: None,
            resuming: false,
            retried: false,
        }
    }

    pub(super) fn attach(&mut self, saver: Arc<dyn CheckpointSaver>, thread: &str, ns: &str) {
        let config = self.config;
        self.persist = Some(Persist {
            saver: saver.clone(),
            thread: thread.to_string(),
            ns: ns.to_string(),
            parent: None,
            shape_due: ns.is_empty(),
            unsaved: ChangeSet::new(),
            resumed: HashMap::new(),
            buffered: Vec::new(),
            held: Vec::new(),
            queue: Arc::new(std::sync::Mutex::new(SaveQueue {
                last_batch: self.g.save_batch_hint.load(Ordering::Relaxed),
                ..SaveQueue::default()
            })),
            background: None,
            durability: config.durability,
            dirty: false,
            commands: 0,
            reruns: 0,
            history: Vec::new(),
            last_writers: Vec::new(),
            waiting: HashMap::new(),
            expects: HashMap::new(),
            answers: HashMap::new(),
            lock: None,
        });
    }

    pub(super) async fn run(&mut self, input: RunInput<S>) -> Result<RunOutput<S>, RunError> {
        let input = if self.retried {
            RunInput::Continue
        } else {
            input
        };
        match input {
            RunInput::Update(update) => self.apply_input(update).await?,
            RunInput::Continue => {
                self.require_checkpoint()?;
                self.resuming = true;
                self.emit_current_values().await;
            }
            RunInput::Command(command) => {
                self.apply_command(command).await?;
                self.resuming = true;
                self.emit_current_values().await;
            }
        }
        loop {
            let tasks = self.next.take();
            if tasks.is_empty() {
                break;
            }
            if !std::mem::take(&mut self.resuming) {
                let before = self.breakpoints(
                    &tasks,
                    &self.g.interrupt_before,
                    &self.config.interrupt_before,
                    "before",
                );
                if !before.is_empty() {
                    self.next.put_back(tasks);
                    return self.pause(self.state.clone(), before).await;
                }
            }
            if self.steps_run >= self.config.recursion_limit {
                self.next.put_back(tasks);
                if let Some(p) = &mut self.persist {
                    p.dirty = true;
                }
                self.finish().await?;
                return Err(RunError::RecursionLimit {
                    limit: self.config.recursion_limit,
                });
            }
            if let (Some(lease), Some(p)) = (&self.config.lease, &self.persist) {
                lease.check(&p.thread)?;
            }
            let span = tracing::debug_span!("superstep", step = self.step, tasks = tasks.len());
            let result = self.superstep(&tasks).instrument(span).await;
            match result {
                Err(e) => {
                    match &e {
                        RunError::Node { .. } => {
                            self.next.put_back(tasks);
                            self.mark_exit_dirty();
                            self.finish_failed().await?;
                        }
                        // Nothing of the step was applied: it is not committed, its
                        // writes are not kept, and continuing runs it again.
                        RunError::InvalidUpdate { step: Some(_), .. } => {
                            self.reject_step(&tasks, &e).await?;
                            self.next.put_back(tasks);
                            self.mark_exit_dirty();
                            self.finish_failed().await?;
                        }
                        // The step's state is not the pre-step state any more: only
                        // the saves already made are waited for.
                        _ => self.abandon().await,
                    }
                    return Err(e);
                }
                Ok(StepEnd::Paused(values, interrupts, refused)) => {
                    self.next.put_back(tasks);
                    let paused = self.pause(values, interrupts).await?;
                    return match refused {
                        Some(e) => Err(*e),
                        None => Ok(paused),
                    };
                }
                Ok(StepEnd::Committed) => {}
            }
            self.step = self.step.saturating_add(1);
            self.steps_run += 1;
            if let Some(p) = &mut self.persist {
                p.dirty = true;
                p.reruns = 0;
                // Held back for a checkpoint (`Exit`): the committed step's writes
                // are in the state now.
                p.buffered.clear();
            }
            if self
                .persist
                .as_ref()
                .is_some_and(|p| p.durability != config::Durability::Exit)
            {
                self.save(CheckpointSource::Loop).await?;
            }
            let after = self.breakpoints(
                &tasks,
                &self.g.interrupt_after,
                &self.config.interrupt_after,
                "after",
            );
            if !after.is_empty() {
                return self.pause(self.state.clone(), after).await;
            }
        }
        self.finish().await?;
        // The run is over: its state moves into the output.
        let values = std::mem::take(&mut self.state);
        Ok(self.output(values, Vec::new()))
    }

    /// A run that continues a thread streams the values it starts from first (as
    /// LangGraph does), stamped with the step of the checkpoint they come from.
    pub(super) async fn emit_current_values(&self) {
        if let Some(em) = &self.emitter {
            events::values(em, self.step.saturating_sub(1), &self.state).await;
        }
    }

    pub(super) fn output(&self, values: S, interrupts: Vec<Interrupt>) -> RunOutput<S> {
        RunOutput {
            values,
            steps: self.steps_run,
            checkpoint: self
                .persist
                .as_ref()
                .and_then(|p| p.parent.clone().map(|id| p.at(Some(id)))),
            interrupts,
        }
    }

    /// Stops the run for outside input; the pending step stays planned.
    pub(super) async fn pause(
        &mut self,
        values: S,
        interrupts: Vec<Interrupt>,
    ) -> Result<RunOutput<S>, RunError> {
        if self.persist.is_none() {
            return Err(RunError::InterruptWithoutCheckpointer {
                node: interrupts
                    .first()
                    .map(|i| i.node.clone())
                    .unwrap_or_default(),
            });
        }
        self.mark_exit_dirty();
        self.finish_failed().await?;
        if let Some(em) = &self.emitter {
            events::interrupted(em, &interrupts).await;
        }
        Ok(self.output(values, interrupts))
    }

    /// With `Exit` durability, a run that stops on the step it loaded keeps that
    /// checkpoint (its pending writes stay valid and this run's writes join them); a
    /// run that moved on saves where it stopped.
    pub(super) fn mark_exit_dirty(&mut self) {
        let moved_on = self.steps_run > 0
            || self.input_applied
            || self.persist.as_ref().is_some_and(|p| p.parent.is_none());
        if let Some(p) = &mut self.persist
            && p.durability == config::Durability::Exit
        {
            p.dirty = moved_on;
        }
    }

    /// Static breakpoint markers for the tasks whose nodes are listed in `compiled` or
    /// `run`.
    pub(super) fn breakpoints(
        &self,
        tasks: &[Task],
        compiled: &[usize],
        run: &[Arc<str>],
        when: &str,
    ) -> Vec<Interrupt> {
        // Runs before every step: nothing to look at without breakpoints.
        if compiled.is_empty() && run.is_empty() {
            return Vec::new();
        }
        let checkpoint = self
            .persist
            .as_ref()
            .and_then(|p| p.parent.clone())
            .unwrap_or_default();
        let mut nodes: Vec<usize> = tasks
            .iter()
            .map(|t| t.node)
            .filter(|n| compiled.contains(n) || run.iter().any(|r| **r == *self.g.nodes[*n].name))
            .collect();
        nodes.dedup();
        nodes
            .into_iter()
            .map(|n| {
                let node = self.g.nodes[n].name.to_string();
                Interrupt {
                    id: interrupt_id(&format!("{checkpoint}:{when}:{node}"), 0),
                    node,
                    value: serde_json::Value::Null,
                    ns: String::new(),
                }
            })
            .collect()
    }
}
