//! The superstep loop: plan tasks, run them concurrently, apply their writes in the
//! deterministic task order, compute the next frontier from edges, joins, routers,
//! `goto`s and `Send`s — and, with a checkpointer, save each task's writes as it
//! finishes and a checkpoint after each step.

mod caching;
mod config;
mod error;
mod frontier;
mod persist;
mod snapshot;
mod tasks;
mod update;
mod writer;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use tracing::Instrument;

pub use config::{Durability, RunConfig, RunInput, RunOutput};
pub use error::{NodePanic, RunError};
pub use snapshot::{StateSnapshot, TaskSnapshot};
pub use update::UpdateAs;
use update::Writer;

use crate::checkpoint::{
    CHECKPOINT_FORMAT, Checkpoint, CheckpointError, CheckpointMetadata, CheckpointSaver,
    CheckpointSource, CheckpointTuple, PendingWrite, PlannedTask, SaveOp, StepRecord, TaskRecord,
    new_checkpoint_id,
};
use crate::compile::{Branch, CompiledGraph, Graph};
use crate::node::{Command, Goto, Interrupt, NodeOutput, Resume, interrupt_id};
use crate::state::{ChangeSet, GraphState, Write};
use crate::stream::{DebugKind, Emitter, RunStream, StreamEvent, StreamMode};
use frontier::{Frontier, Task};
use persist::{Bases, Versions};
use tasks::{Known, StepTasks};
use writer::{Persist, PersistSink, SaveQueue, lock_queue};

/// The writer name of a run's input in error messages.
const INPUT_WRITER: &str = "__input__";

/// The writer name of an update written as `END`, in error messages.
const END_WRITER: &str = "__end__";

/// Task id prefix of resume commands saved on a paused checkpoint.
const COMMAND_TASK: &str = "__command__";

/// Task ids of a step: `{step}:{node}` for tasks scheduled by edges (one per node),
/// `{step}:{node}:send{k}` for the k-th `Send` task. Adding a task to a paused step
/// never changes the ids of the others. After `reruns` rejected attempts of the step
/// (see [`persist::WRITE_REJECTED`]) every id ends in `:rerun{reruns}`, so the
/// rejected attempts' saved writes are not taken for this one's.
pub(crate) fn task_ids<'a>(
    step: i64,
    reruns: u32,
    tasks: impl Iterator<Item = (&'a str, bool)>,
) -> Vec<String> {
    use std::fmt::Write as _;
    let mut sends = 0;
    tasks
        .map(|(node, is_send)| {
            // Sized up front: `format!` would grow the string piece by piece.
            let mut id = String::with_capacity(node.len() + 48);
            if is_send {
                sends += 1;
                let _ = write!(id, "{step}:{node}:send{}", sends - 1);
            } else {
                let _ = write!(id, "{step}:{node}");
            }
            if reruns > 0 {
                let _ = write!(id, ":rerun{reruns}");
            }
            id
        })
        .collect()
}

impl<S: GraphState> CompiledGraph<S> {
    /// Runs the graph.
    ///
    /// `input` is either the state's update type — new input, applied through the
    /// reducers (to a default state, or with a checkpointer to the thread's latest
    /// state) — or `None`, which continues the thread from its saved checkpoint. The
    /// run ends when no task is left.
    ///
    /// ```
    /// use stategraph::prelude::*;
    ///
    /// #[derive(GraphState, Clone, Debug, Default)]
    /// struct Greeting {
    ///     name: String,
    ///     text: String,
    /// }
    ///
    /// #[node]
    /// async fn greet(g: &Greeting) -> GreetingUpdate {
    ///     Greeting::update().text(format!("hello, {}", g.name))
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let graph = StateGraph::<Greeting>::new().add_node(greet).add_edge(START, greet).compile()?;
    /// let out = graph.invoke(Greeting::update().name("ada"), &RunConfig::new()).await?;
    /// assert_eq!(out.values.text, "hello, ada");
    /// assert_eq!(out.steps, 1);
    /// assert!(out.interrupts.is_empty()); // it finished rather than paused
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// The first failing node's error ([`RunError::Node`]), rejected writes, a route
    /// outside its declared targets, the recursion limit, or a checkpoint failure.
    pub async fn invoke(
        &self,
        input: impl Into<RunInput<S>>,
        config: &RunConfig,
    ) -> Result<RunOutput<S>, RunError> {
        let span = tracing::info_span!("stategraph.run", thread_id = config.thread_id.as_deref());
        let input = input.into();
        async move {
            let mut lp = Loop::start(&self.graph, config, None).await?;
            lp.run(input).await
        }
        .instrument(span)
        .await
    }

    /// [`CompiledGraph::invoke`] for callers without an async runtime: runs the graph on
    /// a current-thread tokio runtime.
    ///
    /// # Errors
    /// As `invoke`, plus [`RunError::BlockingInsideRuntime`] when called from inside an
    /// async runtime (use `invoke(..).await` there).
    pub fn invoke_blocking(
        &self,
        input: impl Into<RunInput<S>>,
        config: &RunConfig,
    ) -> Result<RunOutput<S>, RunError> {
        if tokio::runtime::Handle::try_current().is_ok() {
            return Err(RunError::BlockingInsideRuntime);
        }
        // Every driver compiled in: savers that talk to a server need I/O.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(RunError::Runtime)?;
        rt.block_on(self.invoke(input, config))
    }
}

/// Events a stream buffers before the run waits for the consumer.
const STREAM_BUFFER: usize = 64;

impl<S: GraphState> CompiledGraph<S> {
    /// Runs the graph like [`CompiledGraph::invoke`] — the same execution — and
    /// streams its events for `modes` (see [`crate::stream`] for their order). The run
    /// proceeds on a tokio task; it waits whenever the consumer is 64 events behind.
    /// Dropping the stream cancels the run: in-flight nodes are dropped, and with a
    /// checkpointer the thread stays at its last saved checkpoint, ready to continue.
    ///
    /// Must be called inside a tokio runtime; otherwise the stream yields
    /// [`RunError::NoRuntime`].
    ///
    /// ```
    /// use futures::StreamExt;
    /// use stategraph::prelude::*;
    ///
    /// #[derive(GraphState, Clone, Debug, Default)]
    /// struct Download {
    ///     #[reducer(add)]
    ///     bytes: u64,
    /// }
    ///
    /// #[node]
    /// async fn fetch(_: &Download, ctx: &NodeContext) -> Result<DownloadUpdate, NodeError> {
    ///     for percent in [50, 100] {
    ///         ctx.emit(percent).await?; // delivered while the node runs
    ///     }
    ///     Ok(Download::update().bytes(1024))
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let graph = StateGraph::<Download>::new().add_node(fetch).add_edge(START, fetch).compile()?;
    /// let mut events = graph.stream(Download::update(), &RunConfig::new(), StreamMode::CUSTOM | StreamMode::VALUES);
    /// let mut seen = Vec::new();
    /// while let Some(event) = events.next().await {
    ///     match event? {
    ///         StreamEvent::Custom { value, .. } => seen.push(format!("{value}%")),
    ///         StreamEvent::Values { step, values } => seen.push(format!("step {step}: {} bytes", values.bytes)),
    ///         _ => {}
    ///     }
    /// }
    /// assert_eq!(seen, ["step -1: 0 bytes", "50%", "100%", "step 0: 1024 bytes"]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn stream(
        &self,
        input: impl Into<RunInput<S>>,
        config: &RunConfig,
        modes: StreamMode,
    ) -> RunStream<S> {
        let (tx, rx) = tokio::sync::mpsc::channel(STREAM_BUFFER);
        if tokio::runtime::Handle::try_current().is_err() {
            let _ = tx.try_send(Err(RunError::NoRuntime));
            return RunStream { rx, run: None };
        }
        let graph = self.graph.clone();
        let config = config.clone();
        let input = input.into();
        let emitter = Emitter {
            tx: tx.clone(),
            modes,
        };
        let span = tracing::info_span!("stategraph.run", thread_id = config.thread_id.as_deref());
        let run = tokio::spawn(
            async move {
                let result = async {
                    let mut lp = Loop::start(&graph, &config, Some(emitter)).await?;
                    lp.run(input).await
                }
                .await;
                if let Err(e) = result {
                    let _ = tx.send(Err(e)).await;
                }
            }
            .instrument(span),
        );
        RunStream { rx, run: Some(run) }
    }
}

struct Loop<'g, S: GraphState> {
    g: &'g Graph<S>,
    /// The resume values of a task nobody answered: one shared empty list, so a
    /// step does not allocate one per task.
    no_answers: Arc<[serde_json::Value]>,
    /// Scratch space for building task keys.
    key_buf: String,
    config: &'g RunConfig,
    state: S,
    versions: Versions,
    bases: Bases,
    /// The channel versions each node saw when it ran, for the nodes that ran since
    /// the last saved checkpoint (each checkpoint stores only its own steps' entries).
    versions_seen: BTreeMap<String, BTreeMap<String, u64>>,
    next: Frontier,
    barriers: Vec<Vec<bool>>,
    /// Number of the next superstep (the input is step -1 of a fresh thread).
    step: i64,
    steps_run: usize,
    persist: Option<Persist>,
    /// Whether this run applied new input.
    input_applied: bool,
    /// Where a streamed run's events go.
    emitter: Option<Emitter<S>>,
    /// The first step of a run that continues a paused thread does not stop again at
    /// the `interrupt_before` breakpoint it paused on.
    resuming: bool,
}

/// How a superstep ended.
enum StepEnd<S> {
    Committed,
    /// Tasks interrupted: the step is not committed; the values are the state with
    /// the finished tasks' writes applied. With an error, a resume value was refused
    /// (its interrupt is pending again): the run pauses, then fails with it.
    Paused(S, Vec<Interrupt>, Option<Box<RunError>>),
}

impl<'g, S: GraphState> Loop<'g, S> {
    async fn start(
        g: &'g Graph<S>,
        config: &'g RunConfig,
        emitter: Option<Emitter<S>>,
    ) -> Result<Self, RunError> {
        Self::open(g, config, true, emitter).await
    }

    async fn open(
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
        let Some(saver) = &g.saver else {
            return Ok(lp);
        };
        let thread = config
            .thread_id
            .as_deref()
            .ok_or(RunError::MissingThreadId)?;
        // One writer per thread: held until the run (and its last save) is over.
        let lock = saver.lock_thread(thread, config.lock_timeout).await?;
        let at = persist::config_at(thread, config.checkpoint_id.clone());
        let tuple = saver.get_tuple(&at).await?;
        // Under the lock: a racing starter that got here first has saved by now.
        if config.new_thread_only && tuple.is_some() {
            return Err(RunError::ThreadExists {
                thread: thread.to_string(),
            });
        }
        lp.attach(saver.clone(), thread);
        if let Some(p) = &mut lp.persist {
            p.lock = Some(Arc::new(lock));
        }
        match (tuple, &config.checkpoint_id) {
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

    /// The loop a run continuing from `tuple` would start with (for `get_state`).
    pub(crate) async fn inspect(
        g: &'g Graph<S>,
        config: &'g RunConfig,
        saver: Arc<dyn CheckpointSaver>,
        tuple: &CheckpointTuple,
    ) -> Result<Self, RunError> {
        let mut lp = Self::fresh(g, config);
        lp.attach(saver, &tuple.config.thread_id);
        lp.load(tuple, false).await?;
        Ok(lp)
    }

    fn fresh(g: &'g Graph<S>, config: &'g RunConfig) -> Self {
        Loop {
            g,
            config,
            state: S::default(),
            versions: vec![0; S::CHANNELS.len()],
            bases: vec![None; S::CHANNELS.len()],
            versions_seen: BTreeMap::new(),
            no_answers: Arc::from(Vec::new()),
            key_buf: String::new(),
            next: Frontier::new(g.nodes.len()),
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
        }
    }

    fn attach(&mut self, saver: Arc<dyn CheckpointSaver>, thread: &str) {
        let config = self.config;
        self.persist = Some(Persist {
            saver: saver.clone(),
            thread: thread.to_string(),
            parent: None,
            unsaved: ChangeSet::new(),
            resumed: HashMap::new(),
            buffered: Vec::new(),
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

    async fn load(&mut self, t: &CheckpointTuple, fork: bool) -> Result<(), RunError> {
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
        if let Some(last) = t.metadata.steps.last() {
            p.last_writers = last
                .tasks
                .iter()
                .filter(|r| r.wrote)
                .map(|r| Arc::from(r.node.as_str()))
                .collect();
        }
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
        if fork {
            // A new branch from an older checkpoint must not reuse version numbers
            // another branch already stored values under: each channel moves past the
            // thread's highest version and is stored whole by the next checkpoint.
            for info in S::CHANNELS {
                let i = info.index;
                let highest = p.saver.max_version(&t.config, info.name).await?;
                if let Some(highest) = highest.filter(|h| *h > self.versions[i]) {
                    self.versions[i] = highest.saturating_add(1);
                    self.bases[i] = None;
                    p.unsaved.record(i, crate::state::Change::Replaced);
                }
            }
        }
        if !fork {
            let mut writes: Vec<&PendingWrite> = t.pending_writes.iter().collect();
            writes.sort_by(|a, b| (&a.task_id, a.idx).cmp(&(&b.task_id, b.idx)));
            let mut paused_at: HashMap<String, u64> = HashMap::new();
            for w in writes {
                match w.channel.as_str() {
                    persist::WRITE_ERROR => {}
                    persist::WRITE_REJECTED => p.reruns += 1,
                    persist::WRITE_INTERRUPT => {
                        let i =
                            serde_json::from_value::<Interrupt>(w.value.clone()).map_err(|e| {
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
            // Answers from the call a task waits at on are not kept: an answer that
            // call refused is replaced by the next resume, not added after.
            for (task, index) in paused_at {
                if p.waiting.contains_key(&task)
                    && let Some(answers) = p.answers.get_mut(&task)
                {
                    answers.truncate(usize::try_from(index).unwrap_or(usize::MAX));
                }
            }
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
        }
        Ok(())
    }

    /// Applies a resume command's update and destinations to the paused step.
    fn apply_command_output(&mut self, command: NodeOutput<S>) -> Result<(), RunError> {
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

    fn require_checkpoint(&self) -> Result<(), RunError> {
        match &self.persist {
            None => Err(RunError::NothingToContinue {
                reason: "the graph has no checkpointer; pass input instead".into(),
            }),
            Some(p) if p.parent.is_none() => Err(RunError::NothingToContinue {
                reason: format!("thread `{}` has no checkpoint", p.thread),
            }),
            Some(_) => Ok(()),
        }
    }

    /// Applies a resume command: answers go to the waiting tasks, its update is
    /// written, its destinations join the paused step.
    async fn apply_command(&mut self, command: Command<S>) -> Result<(), RunError> {
        self.require_checkpoint()?;
        if let (Some(p), Some(resume)) = (&self.persist, &command.resume) {
            p.check_answers(resume)?;
        }
        let Command {
            update,
            goto,
            resume,
        } = command;
        // The update and destinations are saved as writes of a command task on the
        // paused checkpoint, so they survive this run pausing again.
        let command = NodeOutput {
            writes: update.into_iter().collect(),
            goto,
        };
        if !command.writes.is_empty() || !command.goto.is_empty() {
            // Saved on the checkpoint it was given on, whatever the durability: a later
            // checkpoint already contains its effect.
            if let Some(p) = &self.persist {
                let task = format!("{COMMAND_TASK}:{}", p.commands);
                let writes = persist::encode_output(self.g, &task, &command)?;
                let at = persist::config_at(&p.thread, p.parent.clone());
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
                return Err(RunError::NothingToContinue {
                    reason: format!("the resume value does not serialize: {reason}"),
                });
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

    async fn run(&mut self, input: RunInput<S>) -> Result<RunOutput<S>, RunError> {
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
        Ok(self.output(self.state.clone(), Vec::new()))
    }

    /// A run that continues a thread streams the values it starts from first (as
    /// LangGraph does), stamped with the step of the checkpoint they come from.
    async fn emit_current_values(&self) {
        if let Some(em) = &self.emitter
            && em.wants(StreamMode::VALUES)
        {
            em.send(StreamEvent::Values {
                step: self.step.saturating_sub(1),
                values: self.state.clone(),
            })
            .await;
        }
    }

    fn output(&self, values: S, interrupts: Vec<Interrupt>) -> RunOutput<S> {
        RunOutput {
            values,
            steps: self.steps_run,
            checkpoint: self.persist.as_ref().and_then(|p| {
                p.parent
                    .clone()
                    .map(|id| persist::config_at(&p.thread, Some(id)))
            }),
            interrupts,
        }
    }

    /// Stops the run for outside input; the pending step stays planned.
    async fn pause(
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
            em.send(StreamEvent::Interrupt {
                interrupts: interrupts.clone(),
            })
            .await;
        }
        Ok(self.output(values, interrupts))
    }

    /// With `Exit` durability, a run that stops on the step it loaded keeps that
    /// checkpoint (its pending writes stay valid and this run's writes join them); a
    /// run that moved on saves where it stopped.
    fn mark_exit_dirty(&mut self) {
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
    fn breakpoints(
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
                }
            })
            .collect()
    }

    async fn apply_input(&mut self, update: S::Update) -> Result<(), RunError> {
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
        if let Some(em) = &self.emitter
            && em.wants(StreamMode::VALUES)
        {
            em.send(StreamEvent::Values {
                step: self.step,
                values: self.state.clone(),
            })
            .await;
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
    fn last_writer(&self) -> Result<Option<usize>, RunError> {
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
    fn apply_as(&mut self, writer: Writer, update: S::Update) -> Result<(), RunError> {
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

    fn record(&mut self, changes: &ChangeSet) {
        for (index, _) in changes.iter() {
            self.versions[index] = self.versions[index].saturating_add(1);
        }
        if let Some(p) = &mut self.persist {
            p.unsaved.merge(changes);
            p.dirty = true;
        }
    }

    async fn superstep(&mut self, tasks: &[Task]) -> Result<StepEnd<S>, RunError> {
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

    fn planned(&self) -> Result<Vec<PlannedTask>, RunError> {
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

    fn barrier_map(&self) -> BTreeMap<usize, Vec<String>> {
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
    async fn save(&mut self, source: CheckpointSource) -> Result<(), RunError> {
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
        metadata.steps = std::mem::take(&mut p.history);
        if let Some(parent) = &p.parent {
            metadata.parents.insert(String::new(), parent.clone());
        }
        let parent = persist::config_at(&p.thread, p.parent.replace(id));
        // What the checkpoint event needs, copied only when someone listens.
        let event = self
            .emitter
            .as_ref()
            .filter(|em| em.wants(StreamMode::CHECKPOINTS | StreamMode::DEBUG))
            .map(|_| {
                (
                    persist::config_at(&p.thread, Some(checkpoint.id.clone())),
                    parent.clone(),
                    metadata.clone(),
                    checkpoint
                        .next
                        .iter()
                        .map(|t| t.node.clone())
                        .collect::<Vec<_>>(),
                )
            });
        if p.durability == config::Durability::Async {
            p.enqueue(SaveOp::Checkpoint {
                config: parent,
                checkpoint,
                metadata,
            });
        } else {
            p.saver.put(&parent, checkpoint, metadata).await?;
        }
        if let (Some(em), Some((config, parent, metadata, next))) = (&self.emitter, event) {
            let parent_config = parent.checkpoint_id.is_some().then_some(parent);
            em.send_with_debug(step, DebugKind::Checkpoint, || StreamEvent::Checkpoint {
                config: config.clone(),
                parent_config: parent_config.clone(),
                values: self.state.clone(),
                metadata: metadata.clone(),
                next: next.clone(),
            })
            .await;
        }
        if source == CheckpointSource::Fork {
            self.step = self.step.saturating_add(1);
        }
        Ok(())
    }

    /// At the end of a run (or at its limit): the last checkpoint is saved, and
    /// background saves are awaited.
    async fn finish(&mut self) -> Result<(), RunError> {
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
    async fn reject_step(&mut self, tasks: &[Task], error: &RunError) -> Result<(), RunError> {
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
    async fn abandon(&mut self) {
        if let Some(p) = &mut self.persist
            && let Err(e) = p.flush().await
        {
            tracing::warn!(error = %e, "a background checkpoint save failed after the run failed");
        }
    }

    /// After a node failed: with `Exit` durability, the checkpoint and the finished
    /// siblings' writes are saved now.
    async fn finish_failed(&mut self) -> Result<(), RunError> {
        self.finish().await?;
        if let Some(p) = &mut self.persist
            && !p.buffered.is_empty()
        {
            let at = persist::config_at(&p.thread, p.parent.clone());
            let writes = std::mem::take(&mut p.buffered);
            p.saver.put_writes(&at, writes).await?;
        }
        Ok(())
    }
}

fn lookup<S: GraphState>(g: &Graph<S>, name: &Arc<str>, from: &str) -> Result<usize, RunError> {
    g.index
        .get(name)
        .copied()
        .ok_or_else(|| RunError::UnknownNode {
            name: name.to_string(),
            from: from.to_string(),
        })
}

fn schedule<S: GraphState>(
    g: &Graph<S>,
    goto: Goto<S>,
    from: &str,
    next: &mut Frontier,
) -> Result<(), RunError> {
    match goto {
        Goto::End => {}
        Goto::Node(name) => {
            let i = lookup(g, &name, from)?;
            if !g.nodes[i].takes_state {
                return Err(RunError::PayloadNodeWithoutPayload {
                    node: name.to_string(),
                    from: from.to_string(),
                });
            }
            next.pull(i);
        }
        Goto::Send(send) => {
            let i = lookup(g, &send.node, from)?;
            next.push(i, send.payload);
        }
    }
    Ok(())
}

fn follow_route<S: GraphState>(
    g: &Graph<S>,
    branch: &Branch<S>,
    view: &S,
    from: &str,
    next: &mut Frontier,
) -> Result<Vec<String>, RunError> {
    let route = (branch.router)(view);
    let mut chosen = Vec::with_capacity(route.gotos.len());
    for goto in route.gotos {
        let declared = match &goto {
            Goto::End => branch.declares_end,
            Goto::Node(name) => g
                .index
                .get(name)
                .is_some_and(|i| branch.declared.contains(i)),
            Goto::Send(send) => g
                .index
                .get(&send.node)
                .is_some_and(|i| branch.declared.contains(i)),
        };
        if !declared {
            return Err(RunError::UndeclaredRoute {
                source_node: from.to_string(),
                target: goto.endpoint().to_string(),
                declared: branch.declared_names.clone(),
            });
        }
        chosen.push(goto.endpoint().to_string());
        schedule(g, goto, from, next)?;
    }
    Ok(chosen)
}
