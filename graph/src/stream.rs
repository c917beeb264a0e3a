//! Streaming a run: typed events, in a documented deterministic order, through a
//! bounded buffer (a slow consumer slows the run down; memory stays bounded).
//!
//! Within one superstep the order is: a task-start event per task (task order), live
//! `custom` events while nodes run, then per task (task order) its `updates` event
//! and its task-result event, then the step's `values`, then its `checkpoints` event.
//! `debug` events wrap task and checkpoint events right after them. A step that
//! pauses or fails is not committed: its tasks that ended get task-result events (no
//! `updates`), then the stream ends with an `interrupt` event or the run's error.

use std::fmt;
use std::future::Future;
use std::ops::BitOr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::Stream;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::checkpoint::{CheckpointConfig, CheckpointMetadata};
use crate::node::{BoxFuture, Interrupt};
use crate::runtime::RunError;
use crate::state::{GraphState, MessageChunk};

/// Which events a stream carries; combine with `|`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct StreamMode(u8);

impl StreamMode {
    /// The full state after the input and after every superstep.
    pub const VALUES: Self = Self(1);
    /// Each task's update, after its step.
    pub const UPDATES: Self = Self(1 << 1);
    /// Task start and task result events.
    pub const TASKS: Self = Self(1 << 2);
    /// Each saved checkpoint (only with a checkpointer).
    pub const CHECKPOINTS: Self = Self(1 << 3);
    /// Task and checkpoint events wrapped with step, timestamp and type.
    pub const DEBUG: Self = Self(1 << 4);
    /// Values nodes emit with `NodeContext::emit`, delivered while they run.
    pub const CUSTOM: Self = Self(1 << 5);
    /// Pieces of messages as nodes write them (a model's tokens), sent with
    /// `NodeContext::emit_message` while the node runs — LangGraph's `messages` mode.
    pub const MESSAGES: Self = Self(1 << 7);
    /// Every mode.
    pub const ALL: Self = Self(0b1011_1111);
    /// Also the events of subgraphs (in the same modes), each as a
    /// [`StreamEvent::Subgraph`] tagged with its namespace — LangGraph's
    /// `stream(.., subgraphs=True)`. Not part of [`ALL`](Self::ALL): add it with `|`.
    pub const SUBGRAPHS: Self = Self(1 << 6);

    /// Whether every mode of `other` is in `self`.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether any mode of `other` is in `self`.
    pub const fn intersects(self, other: Self) -> bool {
        self.0 & other.0 != 0
    }
}

impl BitOr for StreamMode {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        Self(self.0 | rhs.0)
    }
}

impl fmt::Debug for StreamMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = [
            (Self::VALUES, "VALUES"),
            (Self::UPDATES, "UPDATES"),
            (Self::TASKS, "TASKS"),
            (Self::CHECKPOINTS, "CHECKPOINTS"),
            (Self::DEBUG, "DEBUG"),
            (Self::CUSTOM, "CUSTOM"),
            (Self::MESSAGES, "MESSAGES"),
            (Self::SUBGRAPHS, "SUBGRAPHS"),
        ];
        let set: Vec<&str> = names
            .iter()
            .filter(|(m, _)| self.contains(*m))
            .map(|(_, n)| *n)
            .collect();
        write!(f, "StreamMode({})", set.join(" | "))
    }
}

/// What a debug event wraps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum DebugKind {
    /// A task started.
    Task,
    /// A task finished (or failed, or paused).
    TaskResult,
    /// A checkpoint was saved.
    Checkpoint,
}

/// One event of a streamed run.
///
/// Serializes (when the state does) as a JSON object tagged by `type`, so it can
/// be sent over a wire (server-sent events, a queue) as it is: `{"type": "updates",
/// "step": 0, "node": "plan", "updates": [..], "cached": false}`; updates are the
/// JSON a node's write is stored as, and deserialize back.
#[derive(Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    bound(
        serialize = "S: Serialize, S::Update: Serialize",
        deserialize = "S: DeserializeOwned, S::Update: DeserializeOwned"
    )
)]
#[non_exhaustive]
pub enum StreamEvent<S: GraphState> {
    /// `VALUES`: the state after the input (`step` -1 on a fresh thread) or a step.
    Values {
        /// The superstep.
        step: i64,
        /// The state.
        values: S,
    },
    /// `UPDATES`: what one task wrote (empty when the node returned nothing).
    Updates {
        /// The superstep.
        step: i64,
        /// The node.
        node: String,
        /// Its updates, in emission order.
        updates: Vec<S::Update>,
        /// Whether they were reused from the node cache instead of running the node.
        cached: bool,
    },
    /// `TASKS`: a task is starting.
    TaskStart {
        /// The superstep.
        step: i64,
        /// The task id.
        id: String,
        /// The node.
        node: String,
        /// A `Send` task's payload as JSON (`None` for tasks taking the state).
        input: Option<Value>,
        /// What scheduled it: `START`, a node (its edge), `branch:<node>` (a router),
        /// `goto:<node>`, `join:<a>+<b>`, or `resume`. Empty for tasks restored from a
        /// checkpoint.
        triggers: Vec<String>,
        /// Whether the node cache will serve it instead of running the node.
        cached: bool,
    },
    /// `TASKS`: a task ended.
    TaskResult {
        /// The superstep.
        step: i64,
        /// The task id.
        id: String,
        /// The node.
        node: String,
        /// Its error, if it failed.
        error: Option<String>,
        /// Its updates, if it finished.
        result: Vec<S::Update>,
        /// Its interrupts, if it paused.
        interrupts: Vec<Interrupt>,
        /// Whether its outcome came from writes saved by an earlier run.
        resumed: bool,
        /// Whether its updates were reused from the node cache instead of running it.
        cached: bool,
    },
    /// `CHECKPOINTS`: a checkpoint was saved.
    Checkpoint {
        /// Names it.
        config: CheckpointConfig,
        /// Its parent.
        parent_config: Option<CheckpointConfig>,
        /// The state it holds.
        values: S,
        /// Its metadata.
        metadata: CheckpointMetadata,
        /// The nodes of the next step (as `get_state` shows them: a deferred node
        /// that waits for other tasks is not among them).
        next: Vec<String>,
    },
    /// `DEBUG`: a task or checkpoint event with its step, time and type.
    Debug {
        /// The superstep.
        step: i64,
        /// When (RFC 3339).
        timestamp: String,
        /// What it wraps.
        kind: DebugKind,
        /// The wrapped event.
        event: Box<StreamEvent<S>>,
    },
    /// `CUSTOM`: a value a node emitted, delivered while it runs.
    Custom {
        /// The node.
        node: String,
        /// The value.
        value: Value,
    },
    /// `MESSAGES`: a piece of a message a node is writing, delivered while it runs.
    Message {
        /// The superstep.
        step: i64,
        /// The node.
        node: String,
        /// The piece (its `id` names the message).
        chunk: MessageChunk,
    },
    /// The run paused: dynamic interrupts carry their values; static breakpoints
    /// carry `null`. Always delivered, whatever the modes.
    Interrupt {
        /// The pending interrupts.
        interrupts: Vec<Interrupt>,
    },
    /// `SUBGRAPHS`: an event of a subgraph's run (at any depth), as it happens —
    /// with several subgraph tasks in one step, in task order (the first task's
    /// live, each later one's once the tasks before it have ended). The
    /// event is the child's own event in its JSON form — the same shape as this
    /// enum's serialized events (`{"type": "updates", ..}`), with the child's channel
    /// values and updates as stored in checkpoints.
    Subgraph {
        /// The child's namespace (`node:digest`, nested levels joined by `|`).
        ns: String,
        /// The child's event.
        event: Value,
    },
}

impl<S: GraphState> StreamEvent<S> {
    /// The mode this event belongs to (`Interrupt` events belong to every mode).
    pub fn mode(&self) -> StreamMode {
        match self {
            StreamEvent::Values { .. } => StreamMode::VALUES,
            StreamEvent::Updates { .. } => StreamMode::UPDATES,
            StreamEvent::TaskStart { .. } | StreamEvent::TaskResult { .. } => StreamMode::TASKS,
            StreamEvent::Checkpoint { .. } => StreamMode::CHECKPOINTS,
            StreamEvent::Debug { .. } => StreamMode::DEBUG,
            StreamEvent::Custom { .. } => StreamMode::CUSTOM,
            StreamEvent::Message { .. } => StreamMode::MESSAGES,
            StreamEvent::Interrupt { .. } => StreamMode::ALL,
            StreamEvent::Subgraph { .. } => StreamMode::SUBGRAPHS,
        }
    }
}

impl<S: GraphState + fmt::Debug> fmt::Debug for StreamEvent<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StreamEvent::Values { step, values } => f
                .debug_struct("Values")
                .field("step", step)
                .field("values", values)
                .finish(),
            StreamEvent::Updates {
                step,
                node,
                updates,
                cached,
            } => f
                .debug_struct("Updates")
                .field("step", step)
                .field("node", node)
                .field("updates", updates)
                .field("cached", cached)
                .finish(),
            StreamEvent::TaskStart {
                step,
                id,
                node,
                input,
                triggers,
                cached,
            } => f
                .debug_struct("TaskStart")
                .field("step", step)
                .field("id", id)
                .field("node", node)
                .field("input", input)
                .field("triggers", triggers)
                .field("cached", cached)
                .finish(),
            StreamEvent::TaskResult {
                step,
                id,
                node,
                error,
                result,
                interrupts,
                resumed,
                cached,
            } => f
                .debug_struct("TaskResult")
                .field("step", step)
                .field("id", id)
                .field("node", node)
                .field("error", error)
                .field("result", result)
                .field("interrupts", interrupts)
                .field("resumed", resumed)
                .field("cached", cached)
                .finish(),
            StreamEvent::Checkpoint {
                config,
                parent_config,
                values,
                metadata,
                next,
            } => f
                .debug_struct("Checkpoint")
                .field("config", config)
                .field("parent_config", parent_config)
                .field("values", values)
                .field("metadata", metadata)
                .field("next", next)
                .finish(),
            StreamEvent::Debug {
                step,
                timestamp,
                kind,
                event,
            } => f
                .debug_struct("Debug")
                .field("step", step)
                .field("timestamp", timestamp)
                .field("kind", kind)
                .field("event", event)
                .finish(),
            StreamEvent::Custom { node, value } => f
                .debug_struct("Custom")
                .field("node", node)
                .field("value", value)
                .finish(),
            StreamEvent::Message { step, node, chunk } => f
                .debug_struct("Message")
                .field("step", step)
                .field("node", node)
                .field("chunk", chunk)
                .finish(),
            StreamEvent::Interrupt { interrupts } => f
                .debug_struct("Interrupt")
                .field("interrupts", interrupts)
                .finish(),
            StreamEvent::Subgraph { ns, event } => f
                .debug_struct("Subgraph")
                .field("ns", ns)
                .field("event", event)
                .finish(),
        }
    }
}

pub(crate) type EventSender<S> = tokio::sync::mpsc::Sender<Result<StreamEvent<S>, RunError>>;

/// Sends a run's events to its stream, filtered by mode.
pub(crate) struct Emitter<S: GraphState> {
    pub(crate) tx: EventSender<S>,
    pub(crate) modes: StreamMode,
}

impl<S: GraphState> Emitter<S> {
    pub(crate) fn wants(&self, mode: StreamMode) -> bool {
        self.modes.intersects(mode)
    }

    /// Whether `events` more events fit in the buffer without waiting for the
    /// consumer.
    pub(crate) fn has_room(&self, events: usize) -> bool {
        self.tx.capacity() >= events
    }

    /// Sends an event; waits while the buffer is full. A closed stream is ignored:
    /// dropping the stream aborts the run anyway.
    pub(crate) async fn send(&self, event: StreamEvent<S>) {
        let _ = self.tx.send(Ok(event)).await;
    }

    /// Sends `event` if its mode is wanted, and its debug wrapper if debug is.
    pub(crate) async fn send_with_debug(
        &self,
        step: i64,
        kind: DebugKind,
        event: impl Fn() -> StreamEvent<S>,
    ) {
        if self.wants(event().mode()) {
            self.send(event()).await;
        }
        if self.wants(StreamMode::DEBUG) {
            self.send(StreamEvent::Debug {
                step,
                timestamp: crate::checkpoint::now_rfc3339(),
                kind,
                event: Box::new(event()),
            })
            .await;
        }
    }

    /// A type-erased sender of the events nodes send while they run (`CUSTOM`,
    /// `MESSAGES`), for node contexts; `None` when neither mode is streamed.
    pub(crate) fn live_sink(&self) -> Option<LiveSink> {
        let modes = self.modes;
        if !modes.intersects(StreamMode::CUSTOM | StreamMode::MESSAGES) {
            return None;
        }
        let tx = self.tx.clone();
        Some(Arc::new(move |live: Live| {
            let event = match live {
                Live::Custom { node, value } => StreamEvent::Custom { node, value },
                Live::Message { step, node, chunk } => StreamEvent::Message { step, node, chunk },
            };
            let tx = tx.clone();
            Box::pin(async move {
                if modes.intersects(event.mode()) {
                    let _ = tx.send(Ok(event)).await;
                }
            })
        }))
    }
}

/// An event a node sends while it runs.
pub(crate) enum Live {
    /// `NodeContext::emit`.
    Custom { node: String, value: Value },
    /// `NodeContext::emit_message`.
    Message {
        step: i64,
        node: String,
        chunk: MessageChunk,
    },
}

/// Delivers the events nodes send while they run.
pub(crate) type LiveSink = Arc<dyn Fn(Live) -> BoxFuture<'static, ()> + Send + Sync>;

/// A streamed run: yields its events, then ends (with `Err` if the run failed).
/// Dropping it cancels the run: in-flight nodes are dropped, and with a
/// checkpointer the thread stays at its last saved checkpoint.
pub struct RunStream<S: GraphState> {
    pub(crate) rx: tokio::sync::mpsc::Receiver<Result<StreamEvent<S>, RunError>>,
    pub(crate) run: Option<tokio::task::JoinHandle<()>>,
}

impl<S: GraphState> Stream for RunStream<S> {
    type Item = Result<StreamEvent<S>, RunError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        match self.rx.poll_recv(cx) {
            Poll::Ready(None) => {}
            other => return other,
        }
        // The run is over. A node that panicked panics here too, as it would in
        // `invoke`, instead of the stream ending as if the run had succeeded.
        let Some(run) = self.run.as_mut() else {
            return Poll::Ready(None);
        };
        match Pin::new(run).poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Err(e)) if e.is_panic() => {
                self.run = None;
                std::panic::resume_unwind(e.into_panic())
            }
            Poll::Ready(_) => {
                self.run = None;
                Poll::Ready(None)
            }
        }
    }
}

impl<S: GraphState> Drop for RunStream<S> {
    fn drop(&mut self) {
        if let Some(run) = &self.run {
            run.abort();
        }
    }
}

impl<S: GraphState> fmt::Debug for RunStream<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunStream").finish_non_exhaustive()
    }
}
