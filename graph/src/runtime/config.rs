//! Per-run configuration, a run's input, and its result.

use std::sync::Arc;
use std::time::Duration;

use crate::checkpoint::CheckpointConfig;
use crate::state::GraphState;

/// When checkpoints are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durability {
    /// Each checkpoint is saved before the next superstep starts (the default: a crash
    /// loses at most the running step, whose finished tasks are kept as pending writes).
    /// A task's writes are stored before any other task of its step runs or is
    /// awaited; the writes of the step's last task are stored with the checkpoint that
    /// follows them, in one saver transaction (one `fsync` on SQLite), so a
    /// single-task step costs one durable write.
    #[default]
    Sync,
    /// Checkpoints are saved in the background while the next step runs; the run
    /// waits for them before returning. A saver whose saves are over when called
    /// (the in-memory one: see `CheckpointSaver::saves_inline`) stores each as it
    /// comes, since waiting costs it nothing.
    Async,
    /// One checkpoint when the run ends, fails or hits its limit.
    Exit,
}

/// Configuration of one run.
///
/// ```
/// use std::time::Duration;
/// use stategraph::prelude::*;
///
/// let config = RunConfig::new()
///     .thread("customer-42")            // which thread (needed with a checkpointer)
///     .recursion_limit(50)              // at most 50 supersteps
///     .max_concurrency(8)               // at most 8 tasks of a step at once
///     .durability(Durability::Async)    // save checkpoints in the background
///     .lock_timeout(Duration::from_secs(5));
/// assert_eq!(config.thread_id(), Some("customer-42"));
/// assert_eq!(config.checkpoint_id(), None); // the thread's latest checkpoint
///
/// // The same thread, from one of its earlier checkpoints (time travel).
/// let earlier = config.clone().checkpoint("000660e703adc9d890bf8b34");
/// assert_eq!(earlier.checkpoint_id(), Some("000660e703adc9d890bf8b34"));
/// ```
#[derive(Clone, Debug)]
pub struct RunConfig {
    pub(crate) thread_id: Option<Arc<str>>,
    pub(crate) checkpoint_id: Option<String>,
    pub(crate) recursion_limit: usize,
    pub(crate) max_concurrency: Option<usize>,
    pub(crate) durability: Durability,
    pub(crate) interrupt_before: Vec<Arc<str>>,
    pub(crate) interrupt_after: Vec<Arc<str>>,
    pub(crate) lock_timeout: Duration,
    pub(crate) new_thread_only: bool,
    /// Recorded as `run_id` in the metadata of every checkpoint the run writes.
    pub(crate) run_id: Option<String>,
    /// Merged into the `extra` metadata of every checkpoint the run writes.
    pub(crate) extra: serde_json::Map<String, serde_json::Value>,
    /// Set when the run is a subgraph's, inside a task of its parent.
    pub(crate) nested: Option<Nested>,
    /// How long the run may go on writing (see [`RunConfig::lease`]).
    pub(crate) lease: Option<super::lease::RunLease>,
    /// Another attempt of `run_id` (see [`RunConfig::retry`]).
    pub(crate) retry: bool,
    /// What every node reads besides the state (see [`RunConfig::configurable`],
    /// [`RunConfig::context`]).
    pub(crate) provided: crate::node::Provided,
}

/// Where a subgraph's run keeps its checkpoints: its parent's saver (or none), under
/// the namespace path of the parent's task. The parent holds the thread's lock.
#[derive(Clone)]
pub(crate) struct Nested {
    pub(crate) saver: Option<Arc<dyn crate::checkpoint::CheckpointSaver>>,
    pub(crate) ns: String,
    /// The store the child's nodes reach: its own, else its parent's.
    pub(crate) store: Option<Arc<dyn crate::store::Store>>,
}

impl std::fmt::Debug for Nested {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Nested")
            .field("saver", &self.saver.is_some())
            .field("ns", &self.ns)
            .finish()
    }
}

impl Default for RunConfig {
    fn default() -> Self {
        Self {
            thread_id: None,
            checkpoint_id: None,
            recursion_limit: Self::DEFAULT_RECURSION_LIMIT,
            max_concurrency: None,
            durability: Durability::Sync,
            interrupt_before: Vec::new(),
            interrupt_after: Vec::new(),
            lock_timeout: Self::DEFAULT_LOCK_TIMEOUT,
            new_thread_only: false,
            run_id: None,
            extra: serde_json::Map::new(),
            nested: None,
            lease: None,
            retry: false,
            provided: crate::node::Provided::default(),
        }
    }
}

impl RunConfig {
    /// Supersteps a run may take unless configured otherwise.
    pub const DEFAULT_RECURSION_LIMIT: usize = 10_000;

    /// How long a run waits for another run of its thread to finish, unless configured
    /// otherwise.
    pub const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(30);

    /// The default configuration.
    pub fn new() -> Self {
        Self::default()
    }

    /// The thread this run belongs to (required once a checkpointer is configured).
    #[must_use]
    pub fn thread(mut self, thread_id: impl Into<Arc<str>>) -> Self {
        self.thread_id = Some(thread_id.into());
        self
    }

    /// Starts from checkpoint `id` of the thread instead of its latest: the run writes a
    /// `fork` checkpoint after it and continues from there, keeping the old branch.
    #[must_use]
    pub fn checkpoint(mut self, id: impl Into<String>) -> Self {
        self.checkpoint_id = Some(id.into());
        self
    }

    /// Most supersteps the run may take: a run needing exactly `limit` succeeds, one
    /// needing more fails with `RunError::RecursionLimit`. `0` is rejected at run time.
    #[must_use]
    pub fn recursion_limit(mut self, limit: usize) -> Self {
        self.recursion_limit = limit;
        self
    }

    /// Most tasks of one superstep running at once (unbounded by default).
    #[must_use]
    pub fn max_concurrency(mut self, tasks: usize) -> Self {
        self.max_concurrency = Some(tasks.max(1));
        self
    }

    /// When checkpoints are saved (default [`Durability::Sync`]).
    #[must_use]
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// Pauses this run before these nodes run (in addition to the compile options').
    /// A node that is not in the graph (a subgraph's node included) fails the run
    /// with [`RunError::UnknownInterruptNode`] before anything is saved.
    ///
    /// [`RunError::UnknownInterruptNode`]: crate::RunError::UnknownInterruptNode
    #[must_use]
    pub fn interrupt_before<N: crate::node::NamedNode>(
        mut self,
        nodes: impl IntoIterator<Item = N>,
    ) -> Self {
        self.interrupt_before
            .extend(nodes.into_iter().map(|n| n.name_of()));
        self
    }

    /// Pauses this run after these nodes ran (in addition to the compile options');
    /// unknown nodes fail the run as with [`RunConfig::interrupt_before`].
    #[must_use]
    pub fn interrupt_after<N: crate::node::NamedNode>(
        mut self,
        nodes: impl IntoIterator<Item = N>,
    ) -> Self {
        self.interrupt_after
            .extend(nodes.into_iter().map(|n| n.name_of()));
        self
    }

    /// Pauses this run before the nodes named `names` (in addition to the compile
    /// options'): the form of [`RunConfig::interrupt_before`] for names known only at
    /// run time. A name that is not a node of the graph (a subgraph's node included)
    /// fails the run with [`RunError::UnknownInterruptNode`] before anything is saved.
    ///
    /// [`RunError::UnknownInterruptNode`]: crate::RunError::UnknownInterruptNode
    #[must_use]
    pub fn interrupt_before_names(
        mut self,
        names: impl IntoIterator<Item = impl Into<Arc<str>>>,
    ) -> Self {
        self.interrupt_before
            .extend(names.into_iter().map(Into::into));
        self
    }

    /// Pauses this run after the nodes named `names` ran; see
    /// [`RunConfig::interrupt_before_names`].
    #[must_use]
    pub fn interrupt_after_names(
        mut self,
        names: impl IntoIterator<Item = impl Into<Arc<str>>>,
    ) -> Self {
        self.interrupt_after
            .extend(names.into_iter().map(Into::into));
        self
    }

    /// How long this run waits for another run writing to the same thread (in this or,
    /// with a shared saver, another process) to finish before failing with
    /// `CheckpointError::ThreadBusy` (default 30 seconds). A thread has one writer at a
    /// time: runs, resumes and `update_state` hold it while they write; `get_state` and
    /// history reads do not wait.
    #[must_use]
    pub fn lock_timeout(mut self, wait: Duration) -> Self {
        self.lock_timeout = wait;
        self
    }

    /// The run holds `lease` (a claim a worker keeps renewing): before each superstep
    /// and each save it checks the lease, and once it has lapsed the run stops with
    /// [`CheckpointError::LeaseLapsed`] — it starts no step and saves nothing more. A
    /// worker that stalls past its lease (a paused process) so cannot write over the
    /// worker that took the run over. Pair it with [`RunConfig::retry`] on the
    /// attempt that takes over.
    ///
    /// [`CheckpointError::LeaseLapsed`]: crate::checkpoint::CheckpointError::LeaseLapsed
    #[must_use]
    pub fn lease(mut self, lease: super::lease::RunLease) -> Self {
        self.lease = Some(lease);
        self
    }

    /// This run is another attempt of the run named by [`RunConfig::run_id`] (its
    /// worker died or lost its lease). If the thread's latest checkpoint was written
    /// by that run id, the run continues from it instead of applying its input (or
    /// command, or starting from `checkpoint`) again; otherwise it runs as asked.
    /// Decided under the thread's lock, so a previous attempt still writing has
    /// finished first: no step that attempt saved runs twice.
    #[must_use]
    pub fn retry(mut self) -> Self {
        self.retry = true;
        self
    }

    /// This run starts its thread: it fails with [`RunError::ThreadExists`] (saving
    /// nothing) when the thread already has a checkpoint. Checked under the thread's
    /// lock, so of several runs — in this or other processes — racing to start one
    /// new thread, exactly one proceeds; the others get the error once it has saved
    /// its first checkpoint (or `ThreadBusy` if they wait past `lock_timeout`).
    ///
    /// [`RunError::ThreadExists`]: crate::RunError::ThreadExists
    #[must_use]
    pub fn new_thread_only(mut self) -> Self {
        self.new_thread_only = true;
        self
    }

    /// Names this run: every checkpoint it writes (input, loop, fork, and those of its
    /// subgraphs) records `id` as [`CheckpointMetadata::run_id`]. `update_state` writes
    /// are not runs and record none.
    ///
    /// [`CheckpointMetadata::run_id`]: crate::checkpoint::CheckpointMetadata::run_id
    #[must_use]
    pub fn run_id(mut self, id: impl Into<String>) -> Self {
        self.run_id = Some(id.into());
        self
    }

    /// Adds `extra` to [`CheckpointMetadata::extra`] of every checkpoint this run writes
    /// (its subgraphs' too); later calls add to and override earlier ones. Keys naming
    /// a typed metadata field (`source`, `step`, `parents`, `run_id`, `steps`) are
    /// dropped: they would clash with those fields in the stored record. So is
    /// `__graph__` ([`GRAPH_SHAPE_KEY`](crate::checkpoint::GRAPH_SHAPE_KEY)), where the
    /// run records the graph's shape.
    ///
    /// ```
    /// use stategraph::prelude::*;
    ///
    /// let mut extra = serde_json::Map::new();
    /// extra.insert("user".into(), "ana".into());
    /// extra.insert("step".into(), 7.into()); // a typed field's name: dropped
    /// let config = RunConfig::new().run_id("req-1").metadata(extra);
    /// assert_eq!(config.configured_run_id(), Some("req-1"));
    /// assert_eq!(config.configured_metadata().len(), 1);
    /// ```
    ///
    /// [`CheckpointMetadata::extra`]: crate::checkpoint::CheckpointMetadata::extra
    #[must_use]
    pub fn metadata(mut self, extra: serde_json::Map<String, serde_json::Value>) -> Self {
        self.extra.extend(
            extra
                .into_iter()
                .filter(|(k, _)| !RESERVED_METADATA.contains(&k.as_str())),
        );
        self
    }

    /// Values every node of the run (and of its subgraphs) reads with
    /// [`NodeContext::configurable`](crate::NodeContext::configurable): LangGraph's
    /// `config["configurable"]` — a model's name, a feature flag. Not saved with
    /// checkpoints: give them to every run of the thread that needs them.
    ///
    /// ```
    /// use serde_json::json;
    /// use stategraph::prelude::*;
    ///
    /// #[derive(GraphState, Clone, Debug, Default)]
    /// struct Reply {
    ///     model: String,
    /// }
    ///
    /// #[node]
    /// async fn answer(_: &Reply, ctx: &NodeContext) -> ReplyUpdate {
    ///     let model = ctx.configurable().get("model").and_then(|m| m.as_str());
    ///     Reply::update().model(model.unwrap_or("default").to_string())
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let graph = StateGraph::<Reply>::new().add_node(answer).add_edge(START, answer).compile()?;
    /// let mut values = serde_json::Map::new();
    /// values.insert("model".into(), json!("small"));
    /// let out = graph.invoke(Reply::update(), &RunConfig::new().configurable(values)).await?;
    /// assert_eq!(out.values.model, "small");
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn configurable(mut self, values: serde_json::Map<String, serde_json::Value>) -> Self {
        self.provided.configurable = Arc::new(values);
        self
    }

    /// A typed context every node of the run (and of its subgraphs) reads with
    /// [`NodeContext::context`](crate::NodeContext::context): LangGraph's run
    /// `context` — who the user is, which model to call, a client to reach a
    /// service with. Not saved with checkpoints: give it to every run that needs it
    /// (a resume too).
    ///
    /// ```
    /// use stategraph::prelude::*;
    ///
    /// struct User {
    ///     name: String,
    /// }
    ///
    /// #[derive(GraphState, Clone, Debug, Default)]
    /// struct Greeting {
    ///     text: String,
    /// }
    ///
    /// #[node]
    /// async fn greet(_: &Greeting, ctx: &NodeContext) -> Result<GreetingUpdate, NodeError> {
    ///     let user: &User = ctx.context()?;
    ///     Ok(Greeting::update().text(format!("Hello, {}!", user.name)))
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let graph = StateGraph::<Greeting>::new().add_node(greet).add_edge(START, greet).compile()?;
    /// let config = RunConfig::new().context(User { name: "Ada".into() });
    /// let out = graph.invoke(Greeting::update(), &config).await?;
    /// assert_eq!(out.values.text, "Hello, Ada!");
    /// // Without it, the node's `context()` call fails, naming the type it wanted.
    /// let err = graph.invoke(Greeting::update(), &RunConfig::new()).await.unwrap_err();
    /// assert!(err.to_string().contains("User"), "{err}");
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn context<C: Send + Sync + 'static>(mut self, context: C) -> Self {
        self.provided.context = Some((Arc::new(context), std::any::type_name::<C>()));
        self
    }

    /// The run id set with [`RunConfig::run_id`].
    pub fn configured_run_id(&self) -> Option<&str> {
        self.run_id.as_deref()
    }

    /// The extra metadata set with [`RunConfig::metadata`] (reserved keys removed).
    pub fn configured_metadata(&self) -> &serde_json::Map<String, serde_json::Value> {
        &self.extra
    }

    /// The configured thread id.
    pub fn thread_id(&self) -> Option<&str> {
        self.thread_id.as_deref()
    }

    /// The configured checkpoint id.
    pub fn checkpoint_id(&self) -> Option<&str> {
        self.checkpoint_id.as_deref()
    }
}

/// Metadata keys of the typed fields of a checkpoint's metadata, and the key of the
/// recorded graph shape: never taken from [`RunConfig::metadata`].
const RESERVED_METADATA: [&str; 6] = [
    "source",
    "step",
    "parents",
    "run_id",
    "steps",
    crate::checkpoint::GRAPH_SHAPE_KEY,
];

/// What a run starts from: new input, or the thread's saved position.
///
/// `invoke` takes anything that converts into it: the state's update type (new input,
/// applied through the reducers) or `None` (continue the thread where it stopped).
pub enum RunInput<S: GraphState> {
    /// New input.
    Update(S::Update),
    /// Continue from the thread's checkpoint: run the tasks it left pending.
    Continue,
    /// Resume a paused thread (`Command::resume(..)`), optionally writing an update
    /// first and adding tasks to the paused step.
    Command(crate::node::Command<S>),
}

impl<S: GraphState> From<crate::node::Command<S>> for RunInput<S> {
    fn from(command: crate::node::Command<S>) -> Self {
        RunInput::Command(command)
    }
}

/// `None` continues the thread; `Some(update)` is new input.
impl<S: GraphState> From<Option<S::Update>> for RunInput<S> {
    fn from(input: Option<S::Update>) -> Self {
        match input {
            Some(update) => RunInput::Update(update),
            None => RunInput::Continue,
        }
    }
}

impl<S: GraphState> std::fmt::Debug for RunInput<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunInput::Update(u) => f.debug_tuple("Update").field(u).finish(),
            RunInput::Continue => f.write_str("Continue"),
            RunInput::Command(c) => f.debug_tuple("Command").field(c).finish(),
        }
    }
}

/// What a finished run returns.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RunOutput<S> {
    /// The final state.
    pub values: S,
    /// Supersteps executed by this run.
    pub steps: usize,
    /// The last checkpoint written, when a checkpointer is configured.
    pub checkpoint: Option<CheckpointConfig>,
    /// Why the run paused: pending interrupts (dynamic ones with their values, static
    /// breakpoints with `null`). Empty when the run finished.
    pub interrupts: Vec<crate::node::Interrupt>,
}
