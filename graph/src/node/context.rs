//! [`NodeContext`]: what a node receives when it runs (its step, attempt and
//! thread, `interrupt` to pause, `emit` to stream), and [`ContextError`], what its
//! calls fail with.

use std::error::Error;
use std::fmt;
use std::sync::Arc;

use super::answer::Pause;
use super::interrupt::{Interrupt, interrupt_id};
use crate::store::Store;

/// What the nodes of a run read besides the state: `configurable` values and a typed
/// context. Not saved with checkpoints.
#[derive(Clone, Default)]
pub(crate) struct Provided {
    pub(crate) configurable: Arc<serde_json::Map<String, serde_json::Value>>,
    /// The context and its type's name.
    pub(crate) context: Option<(Arc<dyn std::any::Any + Send + Sync>, &'static str)>,
}

impl std::fmt::Debug for Provided {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provided")
            .field("configurable", &self.configurable)
            .field("context", &self.context.as_ref().map(|(_, name)| *name))
            .finish()
    }
}

/// What a node receives when it runs.
pub struct NodeContext {
    pub(crate) node: Arc<str>,
    pub(crate) step: usize,
    pub(crate) attempt: u32,
    pub(crate) thread_id: Option<Arc<str>>,
    /// Identifies the task within its checkpoint (interrupt ids derive from it).
    pub(crate) task_key: Arc<str>,
    /// Resume values for this task's `interrupt` calls, in call order.
    pub(crate) resume: Arc<[serde_json::Value]>,
    pub(crate) interrupts_called: std::sync::atomic::AtomicUsize,
    /// Where `emit` and `emit_message` send their events (set when the run is
    /// streamed with `CUSTOM` or `MESSAGES`).
    pub(crate) custom: Option<crate::stream::LiveSink>,
    /// What the runtime hands a subgraph's runner about the run it is part of (its
    /// saver, namespace and durability): set only in graphs with subgraphs.
    pub(crate) scope: Option<Arc<dyn std::any::Any + Send + Sync>>,
    /// The graph's store (`CompileOptions::store`).
    pub(crate) store: Option<Arc<dyn Store>>,
    /// The run's `configurable` values and context.
    pub(crate) provided: Provided,
}

impl Clone for NodeContext {
    fn clone(&self) -> Self {
        Self {
            node: self.node.clone(),
            step: self.step,
            attempt: self.attempt,
            thread_id: self.thread_id.clone(),
            task_key: self.task_key.clone(),
            resume: self.resume.clone(),
            interrupts_called: std::sync::atomic::AtomicUsize::new(
                self.interrupts_called
                    .load(std::sync::atomic::Ordering::Relaxed),
            ),
            custom: self.custom.clone(),
            scope: self.scope.clone(),
            store: self.store.clone(),
            provided: self.provided.clone(),
        }
    }
}

impl fmt::Debug for NodeContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NodeContext")
            .field("node", &self.node)
            .field("step", &self.step)
            .field("attempt", &self.attempt)
            .field("thread_id", &self.thread_id)
            .finish_non_exhaustive()
    }
}

impl NodeContext {
    /// Sends `value` to the run's stream as a `custom` event, while the node is still
    /// running. Waits while the stream's buffer is full; does nothing when the run is
    /// not streamed with `StreamMode::CUSTOM`.
    ///
    /// # Errors
    /// `value` does not serialize.
    pub async fn emit(&self, value: impl serde::Serialize) -> Result<(), ContextError> {
        let Some(sink) = &self.custom else {
            return Ok(());
        };
        let value = serde_json::to_value(value).map_err(|e| {
            ContextError::unserializable(format!(
                "custom event of node `{}` does not serialize: {e}",
                self.node
            ))
        })?;
        sink(crate::stream::Live::Custom {
            node: self.node.to_string(),
            value,
        })
        .await;
        Ok(())
    }

    /// Sends a piece of a message this node is writing (a model's streamed tokens)
    /// to the run's stream as a `message` event, while the node is still running.
    /// Waits while the stream's buffer is full; does nothing when the run is not
    /// streamed with `StreamMode::MESSAGES`. Write the whole message (the chunks
    /// joined with a [`MessageBuilder`](crate::MessageBuilder)) to the state as usual.
    pub async fn emit_message(&self, chunk: crate::state::MessageChunk) {
        if let Some(sink) = &self.custom {
            sink(crate::stream::Live::Message {
                step: i64::try_from(self.step).unwrap_or(i64::MAX),
                node: self.node.to_string(),
                chunk,
            })
            .await;
        }
    }

    /// The running node's name.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The superstep number (0 for the first step after the input).
    pub fn step(&self) -> usize {
        self.step
    }

    /// Which attempt this is, starting at 1 (greater with a retry policy).
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The thread the run belongs to, if the run config names one.
    pub fn thread_id(&self) -> Option<&str> {
        self.thread_id.as_deref()
    }

    /// The run's `configurable` values ([`RunConfig::configurable`](crate::RunConfig::configurable);
    /// empty when none were given).
    pub fn configurable(&self) -> &serde_json::Map<String, serde_json::Value> {
        &self.provided.configurable
    }

    /// The run's context ([`RunConfig::context`](crate::RunConfig::context)).
    ///
    /// # Errors
    /// The run was given no context, or one of another type than `C`.
    pub fn context<C: 'static>(&self) -> Result<&C, ContextError> {
        let wanted = std::any::type_name::<C>();
        let missing = |given| ContextError {
            kind: Kind::NoContext {
                node: self.node.clone(),
                wanted,
                given,
            },
        };
        match &self.provided.context {
            Some((value, name)) => value
                .downcast_ref::<C>()
                .ok_or_else(|| missing(Some(*name))),
            None => Err(missing(None)),
        }
    }

    /// The graph's long-term memory, shared across threads (see
    /// [`store`](crate::store)). Its calls are not checkpointed and not replayed: a
    /// node that runs again (retry, resume, re-run) calls it again, so write by key.
    ///
    /// ```
    /// use serde_json::json;
    /// use stategraph::prelude::*;
    /// use stategraph::store::{InMemoryStore, Store};
    ///
    /// #[derive(GraphState, Clone, Debug, Default)]
    /// struct Chat {
    ///     user: String,
    ///     tone: Option<String>,
    /// }
    ///
    /// #[node]
    /// async fn recall(c: &Chat, ctx: &NodeContext) -> Result<ChatUpdate, NodeError> {
    ///     let prefs = ctx.store()?.get(&["users", &c.user], "prefs").await?;
    ///     let tone = prefs.and_then(|p| p.value["tone"].as_str().map(String::from));
    ///     Ok(Chat::update().tone(tone))
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let store = InMemoryStore::new();
    /// store.put(&["users", "u1"], "prefs", json!({"tone": "brief"})).await?;
    /// let graph = StateGraph::<Chat>::new()
    ///     .add_node(recall)
    ///     .add_edge(START, recall)
    ///     .compile_with(CompileOptions::new().store(store))?;
    /// let out = graph.invoke(Chat::update().user("u1"), &RunConfig::new()).await?;
    /// assert_eq!(out.values.tone.as_deref(), Some("brief"));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// The graph was compiled without a store.
    pub fn store(&self) -> Result<&Arc<dyn Store>, ContextError> {
        self.store.as_ref().ok_or_else(|| ContextError {
            kind: Kind::NoStore(self.node.clone()),
        })
    }

    /// Pauses the run for outside input (human in the loop).
    ///
    /// The n-th call in a run of this task returns the n-th resume value given with
    /// `Command::resume(..)`, decoded as `R`. Without one, it returns an error carrying
    /// an [`Interrupt`] with `value`: propagate it with `?`, and the run stops after the
    /// step's other tasks finish. On resume the node runs again from its start, so code
    /// before the call runs again; earlier calls return their earlier answers.
    ///
    /// Needs a checkpointer (the run fails clearly without one). Interrupts are never
    /// retried by a retry policy.
    ///
    /// ```
    /// use serde_json::json;
    /// use stategraph::prelude::*;
    ///
    /// #[derive(GraphState, Clone, Debug, Default)]
    /// struct Refund {
    ///     amount: u32,
    ///     approved_by: Option<String>,
    /// }
    ///
    /// #[node]
    /// fn approve(r: &Refund, ctx: &NodeContext) -> Result<RefundUpdate, NodeError> {
    ///     let who: String = ctx.interrupt(json!({ "approve refund of": r.amount }))?;
    ///     Ok(Refund::update().approved_by(Some(who)))
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let graph = StateGraph::<Refund>::new()
    ///     .add_node(approve)
    ///     .add_edge(START, approve)
    ///     .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))?;
    /// let thread = RunConfig::new().thread("refund-9");
    ///
    /// let paused = graph.invoke(Refund::update().amount(120u32), &thread).await?;
    /// assert_eq!(paused.interrupts[0].node, "approve");
    /// assert_eq!(paused.interrupts[0].value["approve refund of"], 120);
    ///
    /// let done = graph.invoke(Command::resume("grace"), &thread).await?;
    /// assert_eq!(done.values.approved_by.as_deref(), Some("grace"));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// A resume value that does not decode as `R` is refused: the run fails with
    /// [`RunError::InvalidResume`](crate::RunError::InvalidResume) and the same
    /// interrupt stays pending, so the next resume answers it afresh. (When the
    /// resuming process has seen a node ask for `R`, the value is refused before the
    /// node runs and nothing is saved.)
    ///
    /// # Errors
    /// The interrupt (to propagate), or a `value` that does not serialize.
    pub fn interrupt<T: serde::Serialize, R: serde::de::DeserializeOwned>(
        &self,
        value: T,
    ) -> Result<R, ContextError> {
        let n = self
            .interrupts_called
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let expects = super::answer::expect::<R>();
        // A refused answer raises the interrupt again: the next resume replaces it.
        let refused = match self.resume.get(n) {
            Some(answer) => match <R as serde::Deserialize>::deserialize(answer) {
                Ok(decoded) => return Ok(decoded),
                Err(e) => Some(e.to_string()),
            },
            None => None,
        };
        let value = serde_json::to_value(value).map_err(|e| {
            ContextError::unserializable(format!(
                "interrupt value of node `{}` does not serialize: {e}",
                self.node
            ))
        })?;
        Err(ContextError::paused(super::answer::Pause {
            interrupt: Interrupt {
                id: interrupt_id(&self.task_key, n),
                node: self.node.to_string(),
                value,
                ns: String::new(),
            },
            index: n,
            expects,
            refused,
        }))
    }
}

impl NodeContext {
    /// The pause of a subgraph task whose child run stopped at `interrupt`: recorded
    /// as this task's next `interrupt` call, so the answer comes back in `resume`.
    pub(crate) fn forward_pause(&self, interrupt: Interrupt) -> ContextError {
        ContextError::paused(super::answer::Pause {
            interrupt,
            index: self.resume.len(),
            expects: super::answer::expect::<serde_json::Value>(),
            refused: None,
        })
    }

    /// The resume values given to this task, in call order.
    pub(crate) fn resume_values(&self) -> &[serde_json::Value] {
        &self.resume
    }
}

/// What a [`NodeContext`] call fails with: the node paused at
/// an interrupt (propagate it with `?`, and the run pauses), or a value did not
/// serialize.
///
/// It is a plain error type, so `?` converts it into whatever the node returns: a
/// [`NodeError`](super::NodeError), a `Box<dyn Error + Send + Sync>`, an `anyhow::Error`, or an error
/// type of one's own with a variant for it (thiserror's `#[from] ContextError` or
/// `#[error(transparent)]`). The pause is found through the error's sources, so keep
/// it as the variant's source rather than turning it into a message.
#[derive(Debug)]
pub struct ContextError {
    kind: Kind,
}

// Boxed: the error is returned by value from every `interrupt` call.
#[derive(Debug)]
enum Kind {
    Paused(Box<Pause>),
    Unserializable(String),
    /// `store()` on a graph compiled without one (the node's name).
    NoStore(Arc<str>),
    /// `context::<C>()` on a run without a context of type `C`.
    NoContext {
        node: Arc<str>,
        wanted: &'static str,
        given: Option<&'static str>,
    },
}

impl ContextError {
    pub(super) fn paused(pause: Pause) -> Self {
        Self {
            kind: Kind::Paused(Box::new(pause)),
        }
    }

    pub(super) fn unserializable(message: String) -> Self {
        Self {
            kind: Kind::Unserializable(message),
        }
    }
}

impl fmt::Display for ContextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Paused(pause) => write!(f, "node `{}` paused", pause.interrupt.node),
            Kind::Unserializable(message) => f.write_str(message),
            Kind::NoStore(node) => write!(
                f,
                "no store configured for node `{node}`: compile the graph with CompileOptions::store(..)"
            ),
            Kind::NoContext {
                node,
                wanted,
                given: None,
            } => write!(
                f,
                "node `{node}` reads a run context of type `{wanted}`, but the run was given none: pass it with RunConfig::context(..)"
            ),
            Kind::NoContext {
                node,
                wanted,
                given: Some(given),
            } => write!(
                f,
                "node `{node}` reads a run context of type `{wanted}`, but the run's context is a `{given}`"
            ),
        }
    }
}

impl Error for ContextError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match &self.kind {
            Kind::Paused(pause) => Some(&**pause),
            Kind::Unserializable(_) | Kind::NoStore(_) | Kind::NoContext { .. } => None,
        }
    }
}
