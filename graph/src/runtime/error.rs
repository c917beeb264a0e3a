//! Why a run stopped without finishing.

use crate::checkpoint::CheckpointError;
use crate::node::NodeError;
use crate::state::InvalidUpdate;

/// A run failed. The variant names the node, channel or limit involved.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// A node returned an error (after its retries); in-flight siblings were cancelled.
    #[error("node `{node}` failed in superstep {step}: {source}")]
    Node {
        /// The failing node.
        node: String,
        /// The superstep.
        step: usize,
        /// The node's own error.
        #[source]
        source: NodeError,
    },
    /// A superstep's writes (or the input, `step: None`) were rejected; nothing of that
    /// step was applied.
    #[error("{} rejected: {source}", match step { Some(s) => format!("writes of superstep {s}"), None => "the run's input".to_string() })]
    InvalidUpdate {
        /// The superstep, or `None` for the input.
        step: Option<usize>,
        /// Why.
        #[source]
        source: InvalidUpdate,
    },
    /// The run needed more supersteps than the recursion limit.
    #[error(
        "recursion limit of {limit} supersteps reached without finishing; raise it with `RunConfig::recursion_limit` if the graph is meant to run longer"
    )]
    RecursionLimit {
        /// The limit.
        limit: usize,
    },
    /// `RunConfig::recursion_limit(0)`.
    #[error("recursion limit must be at least 1")]
    ZeroRecursionLimit,
    /// A router returned a destination it did not declare.
    #[error("router after `{source_node}` chose `{target}`, which is not among its declared targets [{}]; add it to the conditional edge's targets", declared.join(", "))]
    UndeclaredRoute {
        /// The router's source node.
        source_node: String,
        /// The undeclared destination.
        target: String,
        /// The declared targets.
        declared: Vec<String>,
    },
    /// A `goto` or `Send` named a node that is not in the graph.
    #[error("`{from}` sent the run to `{name}`, which is not a node of this graph")]
    UnknownNode {
        /// The missing node.
        name: String,
        /// Who named it.
        from: String,
    },
    /// `update_subgraph_state` named a namespace where the subgraph has no state.
    #[error(
        "subgraph `{subgraph}` has no state in namespace `{ns}` of thread `{thread}`; an interrupt's `ns` or `get_state_subgraphs` names the namespaces of its tasks"
    )]
    UnknownSubgraphState {
        /// The subgraph node.
        subgraph: String,
        /// The namespace given.
        ns: String,
        /// The thread.
        thread: String,
    },
    /// A `goto` or route named a node that takes a `Send` payload.
    #[error(
        "`{from}` routed to `{node}` without a payload; `{node}` takes a `Send` payload: use `stategraph::Send::new`"
    )]
    PayloadNodeWithoutPayload {
        /// The payload node.
        node: String,
        /// Who routed to it.
        from: String,
    },
    /// A checkpointer is configured but the run config names no thread.
    #[error(
        "this graph has a checkpointer, so runs need a thread: use `RunConfig::new().thread(\"<id>\")`"
    )]
    MissingThreadId,
    /// A run, read or edit that needs a thread's saved state found none: the graph
    /// has no checkpointer, or the thread has no checkpoint.
    #[error("nothing to continue: {reason}")]
    NothingToContinue {
        /// Why.
        reason: ContinueReason,
    },
    /// `Command::resume` was given a value that does not serialize to JSON.
    #[error("the resume value does not serialize: {reason}")]
    UnserializableResume {
        /// The serializer's message.
        reason: String,
    },
    /// A run configured with `RunConfig::new_thread_only` found its thread started
    /// already (by an earlier or a racing run); nothing was saved.
    #[error(
        "thread `{thread}` already exists, and this run was to start it (`RunConfig::new_thread_only`); continue it with `invoke(None, ..)`, or start another thread id"
    )]
    ThreadExists {
        /// The thread.
        thread: String,
    },
    /// `RunConfig::checkpoint` names a checkpoint the thread does not have.
    #[error("thread `{thread}` has no checkpoint `{id}`")]
    UnknownCheckpoint {
        /// The thread.
        thread: String,
        /// The checkpoint id.
        id: String,
    },
    /// A node called `interrupt` on a graph without a checkpointer.
    #[error(
        "node `{node}` asked to interrupt, but the graph has no checkpointer to pause on; compile with `CompileOptions::new().checkpointer(..)`"
    )]
    InterruptWithoutCheckpointer {
        /// The node.
        node: String,
    },
    /// A node returned `Command::parent(..)`: inside a subgraph its parent applies
    /// the command; in the root graph there is no parent to hand it to.
    #[error(
        "node `{node}` handed control to its parent graph with `Command::parent`, but it does not run inside a subgraph"
    )]
    ParentCommand {
        /// The node.
        node: String,
        /// The command for the parent.
        handoff: crate::node::Handoff,
    },
    /// A single resume value while several interrupts are pending.
    #[error("{} interrupts are pending ({}); resume with a map from interrupt id to value", ids.len(), ids.join(", "))]
    AmbiguousResume {
        /// The pending interrupt ids.
        ids: Vec<String>,
    },
    /// A resume value does not decode as the type the interrupted node asks for. The
    /// interrupt stays pending; resume it again with a value of that type.
    #[error(
        "resume value for interrupt {interrupt} of node `{node}` does not decode as `{expected}`: {reason}; the interrupt is still pending: resume it again with a value of that type"
    )]
    InvalidResume {
        /// The interrupt's id.
        interrupt: String,
        /// The interrupted node.
        node: String,
        /// The Rust type the node decodes its answer into.
        expected: String,
        /// Why the value does not decode.
        reason: String,
    },
    /// A resume names an interrupt that is not pending.
    #[error("no pending interrupt has id `{id}`")]
    UnknownInterrupt {
        /// The id given.
        id: String,
    },
    /// `update_state` without `as_node` after a step in which several nodes wrote.
    #[error("several nodes wrote in the last step ({}); say which one the update is from with `update_state_as`", candidates.join(", "))]
    AmbiguousUpdate {
        /// The nodes that wrote.
        candidates: Vec<String>,
    },
    /// Saving or loading a checkpoint failed.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// `stream` was called outside a tokio runtime.
    #[error("`stream` needs a tokio runtime to run the graph on; call it from async code")]
    NoRuntime,
    /// `invoke_blocking` was called from inside an async runtime.
    #[error(
        "`invoke_blocking` cannot run inside an async runtime; call `invoke(..).await` instead"
    )]
    BlockingInsideRuntime,
    /// The runtime for `invoke_blocking` could not be created.
    #[error("could not start a runtime for `invoke_blocking`: {0}")]
    Runtime(#[source] std::io::Error),
    /// `RunConfig::interrupt_before`/`interrupt_after` (or their `_names` forms) named
    /// a node that is not in the graph; nothing was saved.
    #[error(
        "`{node}` is not a node of this graph, so the run cannot pause at it; the graph's nodes are: {known}"
    )]
    UnknownInterruptNode {
        /// The name given.
        node: String,
        /// The graph's nodes, comma-separated.
        known: String,
    },
    /// A cache operation on a graph compiled without a cache store.
    #[error("the graph has no cache store; compile it with `CompileOptions::cache(..)`")]
    NoCacheStore,
    /// A cache operation on a node without a cache policy (or not in the graph).
    #[error("`{node}` has no cache policy; give it one with `StateGraph::cache`")]
    NotCached {
        /// The node.
        node: String,
    },
    /// Staleness asked of a `Send` target, whose cache entries are keyed by payload.
    #[error(
        "`{node}` is a `Send` target: its cache is keyed by each payload, not by the \
         thread's channels, so it has no single staleness"
    )]
    PayloadKeyedCache {
        /// The node.
        node: String,
    },
}

impl RunError {
    /// The failing node's own error, if the run failed in a node.
    pub fn node_error(&self) -> Option<&NodeError> {
        match self {
            RunError::Node { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// A node panicked. The panic is caught where the task runs and fails the run like
/// an error the node returned: [`RunError::Node`] carries it (find it with
/// `err.node_error().and_then(|e| e.downcast_ref::<NodePanic>())`), finished
/// siblings' writes are kept and the thread is released. A panic is never retried.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the node panicked: {message}")]
#[non_exhaustive]
pub struct NodePanic {
    /// The panic's message (`(a panic without a message)` for other payloads).
    pub message: String,
}

/// Why there is nothing to continue ([`RunError::NothingToContinue`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ContinueReason {
    /// The graph was compiled without a checkpointer, so it keeps no state.
    #[error(
        "the graph has no checkpointer, which {needed_by} needs: compile it with `CompileOptions::checkpointer`, or pass input instead"
    )]
    NoCheckpointer {
        /// What needed one (`invoke(None, ..)`, `get_state`, `update_state`, ...).
        needed_by: &'static str,
    },
    /// The thread has no checkpoint (it never ran, or was deleted).
    #[error("thread `{thread}` has no checkpoint")]
    NoCheckpoint {
        /// The thread.
        thread: String,
    },
}
