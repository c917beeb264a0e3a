//! Subgraphs: a compiled graph run as a node of another graph.
//!
//! A [`Subgraph`] maps the parent's state into the child's input and the child's
//! final state back into an update of the parent, with plain typed functions — so
//! writing a child's key into the parent, or mapping a field into one of another
//! type, does not compile. Each task of a subgraph node runs the child graph to its
//! end (or to an interrupt): the child's checkpoints live under the parent's thread,
//! in a namespace of their own (`node:task`, nested levels joined by `|`), so an
//! interrupt inside the child pauses the whole run and a resume continues the child
//! exactly where it stopped.
//!
//! ```
//! use stategraph::prelude::*;
//!
//! #[derive(GraphState, Clone, Debug, Default)]
//! struct Research {
//!     topic: String,
//!     #[reducer(append)]
//!     notes: Vec<String>,
//! }
//!
//! #[node]
//! fn search(r: &Research) -> ResearchUpdate {
//!     Research::update().notes(vec![format!("found: {}", r.topic)])
//! }
//!
//! #[node]
//! fn summarize(r: &Research) -> ResearchUpdate {
//!     Research::update().notes(vec![format!("{} notes", r.notes.len())])
//! }
//!
//! #[derive(GraphState, Clone, Debug, Default)]
//! struct Report {
//!     question: String,
//!     findings: Vec<String>,
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let research = StateGraph::<Research>::new()
//!     .add_node(search)
//!     .add_node(summarize)
//!     .add_edge(START, search)
//!     .add_edge(search, summarize)
//!     .compile()?;
//!
//! let mut report = StateGraph::<Report>::new();
//! let step = report.add_subgraph(Subgraph::new(
//!     "research",
//!     research,
//!     |r: &Report| Research::update().topic(r.question.clone()),
//!     |child: &Research| Report::update().findings(child.notes.clone()),
//! ));
//! report.add_edge(START, &step);
//! let report = report.compile()?;
//!
//! let out = report.invoke(Report::update().question("tides"), &RunConfig::new()).await?;
//! assert_eq!(out.values.findings, ["found: tides", "1 notes"]);
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::sync::Arc;

use crate::builder::{NodeSpec, StateGraph};
use crate::compile::CompiledGraph;
use crate::future::BoxFuture;
use crate::node::{
    Command, NodeContext, NodeError, NodeResult, NodeReturn, PayloadCodec, Runner, SubgraphHandle,
    TaskInput,
};
use crate::runtime::{ChildEnd, RunError, run_child};
use crate::state::GraphState;

/// Where a subgraph keeps its checkpoints (LangGraph's `checkpointer=None/False`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum SubgraphCheckpoints {
    /// In the parent's saver, under the task's namespace (the default): an interrupt
    /// inside the child pauses the run, and a re-run of the task (after a resume or
    /// a crash) continues the child where it stopped.
    #[default]
    Inherit,
    /// Nowhere: the child runs in memory and, if its task runs again, it runs again
    /// whole from its input. Its nodes cannot interrupt.
    None,
}

type InputMap<P, C> = dyn Fn(&P) -> Result<<C as GraphState>::Update, NodeError> + Send + Sync;
/// The child's final state, and the parent's state the task started from (`None`
/// for a `Send` task).
type OutputMap<P, C> = dyn Fn(&C, Option<&P>) -> NodeResult<P> + Send + Sync;

/// A compiled graph over `C` made into a node of a graph over `P`, with the typed
/// mappings between the two states. Add it with [`StateGraph::add_subgraph`].
pub struct Subgraph<P: GraphState, C: GraphState> {
    name: Arc<str>,
    graph: CompiledGraph<C>,
    input: Arc<InputMap<P, C>>,
    output: Arc<OutputMap<P, C>>,
    checkpoints: SubgraphCheckpoints,
}

impl<P: GraphState, C: GraphState> Subgraph<P, C> {
    /// A subgraph node called `name` running `graph`. Each of its tasks starts the
    /// child from `input` (the child's update, built from the parent's state — or
    /// a `Send` payload of the child's update type), and when the child ends,
    /// `output` turns its final state into what the node returns to the parent: the
    /// parent's update, or a `Command` (which may also route the parent).
    pub fn new<R>(
        name: impl Into<Arc<str>>,
        graph: CompiledGraph<C>,
        input: impl Fn(&P) -> C::Update + Send + Sync + 'static,
        output: impl Fn(&C) -> R + Send + Sync + 'static,
    ) -> Self
    where
        R: NodeReturn<State = P>,
    {
        Self {
            name: name.into(),
            graph,
            input: Arc::new(move |parent: &P| Ok(input(parent))),
            output: Arc::new(move |child: &C, _: Option<&P>| output(child).into_output()),
            checkpoints: SubgraphCheckpoints::default(),
        }
    }

    /// Where the child's checkpoints go (default: the parent's saver).
    #[must_use]
    pub fn checkpoints(mut self, mode: SubgraphCheckpoints) -> Self {
        self.checkpoints = mode;
        self
    }
}

impl<S: GraphState> Subgraph<S, S> {
    /// A subgraph over the parent's own state type that reads and writes the
    /// parent's channels directly: each task starts the child from the parent's
    /// state as it is, and when the child ends, what it changed goes back to the
    /// parent — once: an `append` channel the child only added to gets the new
    /// items through its reducer (so appends of sibling tasks stay), and any other
    /// changed channel is overwritten with the child's final value. Nothing is
    /// applied twice (LangGraph's same-state subgraphs return their whole state and
    /// the parent's reducers apply it again, duplicating list items).
    ///
    /// An overwrite replaces the channel for the step: a sibling task's reducer
    /// writes to a channel the child overwrote are not applied, and two overwrites
    /// of one channel in one step fail the step
    /// ([`InvalidUpdate`](crate::InvalidUpdate)). As a `Send` target, the child
    /// starts from a default state with the payload applied. Untracked channels do
    /// not cross.
    ///
    /// ```
    /// use stategraph::prelude::*;
    ///
    /// #[derive(GraphState, Clone, Debug, Default)]
    /// struct Doc {
    ///     #[reducer(append)]
    ///     log: Vec<String>,
    ///     title: String,
    /// }
    ///
    /// #[node]
    /// fn draft(d: &Doc) -> DocUpdate {
    ///     Doc::update().log([format!("drafted after {} entries", d.log.len())]).title("Tides")
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let writer = StateGraph::<Doc>::new().add_node(draft).add_edge(START, draft).compile()?;
    /// let mut doc = StateGraph::<Doc>::new();
    /// let step = doc.add_subgraph(Subgraph::shared("writer", writer));
    /// doc.add_edge(START, &step);
    /// let doc = doc.compile()?;
    /// let out = doc.invoke(Doc::update().log(["outline"]), &RunConfig::new()).await?;
    /// assert_eq!(out.values.log, ["outline", "drafted after 1 entries"]); // not twice
    /// assert_eq!(out.values.title, "Tides");
    /// # Ok(())
    /// # }
    /// ```
    pub fn shared(name: impl Into<Arc<str>>, graph: CompiledGraph<S>) -> Self {
        let name = name.into();
        let into = name.clone();
        let back = name.clone();
        Self {
            name,
            graph,
            input: Arc::new(move |parent: &S| overwrite_all(&into, parent, None)),
            output: Arc::new(move |child: &S, start: Option<&S>| {
                let start = start.cloned().unwrap_or_default();
                let update = overwrite_all(&back, child, Some(&start))?;
                crate::node::update_output::<S>(update)
            }),
            checkpoints: SubgraphCheckpoints::default(),
        }
    }
}

/// An update carrying `state`'s tracked channels: all of them as overwrites, or,
/// given `since`, those that differ from it — an `append` channel the child only
/// added to as its new items (through the reducer, so sibling tasks' appends
/// stay), any other as an overwrite.
fn overwrite_all<S: GraphState>(
    subgraph: &str,
    state: &S,
    since: Option<&S>,
) -> Result<S::Update, NodeError> {
    let failed = |e: crate::state::CodecError| {
        NodeError::msg(format!(
            "subgraph `{subgraph}` could not pass its state on: {e}"
        ))
    };
    let mut writes = serde_json::Map::new();
    for info in S::CHANNELS {
        let Some(value) = state.encode_channel(info.index).map_err(failed)? else {
            continue;
        };
        let before = match since {
            Some(before) => before.encode_channel(info.index).map_err(failed)?,
            None => None,
        };
        if before.as_ref() == Some(&value) {
            continue;
        }
        let write = match (info.reducer, before, &value) {
            ("append", Some(serde_json::Value::Array(old)), serde_json::Value::Array(new))
                if new.len() >= old.len() && new[..old.len()] == old[..] =>
            {
                serde_json::json!({ "reduce": new[old.len()..] })
            }
            _ => serde_json::json!({ "overwrite": value }),
        };
        writes.insert(info.name.to_string(), write);
    }
    S::decode_update(serde_json::Value::Object(writes)).map_err(failed)
}

impl<P: GraphState, C: GraphState> fmt::Debug for Subgraph<P, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subgraph")
            .field("name", &self.name)
            .field("graph", &self.graph)
            .field("checkpoints", &self.checkpoints)
            .finish_non_exhaustive()
    }
}

impl<P: GraphState> StateGraph<P> {
    /// Adds a subgraph node and returns its handle: use it like a node in edges,
    /// routes and `goto`, or as the target of `Send::new(&handle, child_update)` to
    /// run the child on a payload (map-reduce over whole sub-workflows).
    pub fn add_subgraph<C: GraphState>(
        &mut self,
        subgraph: Subgraph<P, C>,
    ) -> SubgraphHandle<P, C> {
        let name = subgraph.name.clone();
        let child = subgraph.graph.graph.clone();
        self.nodes.push(NodeSpec {
            name: name.clone(),
            runner: runner(Arc::new(subgraph)),
            takes_state: true,
            payload_codec: Some(update_codec::<C>()),
            reads: None,
            child: Some(child),
        });
        SubgraphHandle::new(name)
    }
}

fn runner<P: GraphState, C: GraphState>(sub: Arc<Subgraph<P, C>>) -> Runner<P> {
    Runner::Async(Arc::new(
        move |input: TaskInput<'_, P>, ctx: &NodeContext| -> BoxFuture<'_, NodeResult<P>> {
            run(sub.clone(), input, ctx)
        },
    ))
}

fn run<'a, P: GraphState, C: GraphState>(
    sub: Arc<Subgraph<P, C>>,
    input: TaskInput<'a, P>,
    ctx: &'a NodeContext,
) -> BoxFuture<'a, NodeResult<P>> {
    let start_state = match input {
        TaskInput::State(parent) => Some(parent),
        TaskInput::Payload(_) => None,
    };
    let start = match input {
        TaskInput::State(parent) => (sub.input)(parent),
        TaskInput::Payload(payload) => {
            payload.downcast_ref::<C::Update>().cloned().ok_or_else(|| {
                NodeError::msg(format!(
                    "subgraph `{}` takes a `Send` payload of type `{}`",
                    sub.name,
                    std::any::type_name::<C::Update>()
                ))
            })
        }
    };
    Box::pin(async move {
        let inherit = sub.checkpoints == SubgraphCheckpoints::Inherit;
        match run_child(&sub.graph.graph, ctx, start?, inherit).await {
            Ok(ChildEnd::Done(state)) => (sub.output)(&state, start_state),
            Ok(ChildEnd::Paused(interrupt)) => Err(ctx.forward_pause(interrupt).into()),
            Ok(ChildEnd::Handoff(handoff)) => match handoff.command.downcast::<Command<P>>() {
                Ok(command) => command.into_output(),
                Err(_) => Err(NodeError::msg(format!(
                    "a node of subgraph `{}` handed off a `Command<{}>`, but the graph around it is over `{}`: `Command::parent` takes the parent's command",
                    sub.name,
                    handoff.state,
                    std::any::type_name::<P>()
                ))),
            },
            Err(source) => Err(NodeError::new(SubgraphError {
                subgraph: sub.name.to_string(),
                source,
            })),
        }
    })
}

/// A subgraph's run failed (the error names the child's node or checkpoint problem).
#[derive(Debug, thiserror::Error)]
#[error("subgraph `{subgraph}` failed")]
pub struct SubgraphError {
    /// The subgraph node.
    pub subgraph: String,
    /// What its run failed with.
    #[source]
    pub source: RunError,
}

/// How `Send` payloads of a subgraph (its child's updates) are stored in checkpoints.
fn update_codec<C: GraphState>() -> PayloadCodec {
    PayloadCodec {
        encode: encode_update::<C>,
        decode: decode_update::<C>,
    }
}

fn encode_update<C: GraphState>(
    payload: &(dyn std::any::Any + Send + Sync),
) -> Option<Result<serde_json::Value, serde_json::Error>> {
    let update = payload.downcast_ref::<C::Update>()?;
    Some(C::encode_update(update).map_err(serde::ser::Error::custom))
}

fn decode_update<C: GraphState>(
    value: serde_json::Value,
) -> Result<Arc<dyn std::any::Any + Send + Sync>, serde_json::Error> {
    let update = C::decode_update(value).map_err(serde::de::Error::custom)?;
    Ok(Arc::new(update))
}
