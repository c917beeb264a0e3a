//! Node definitions: what `#[node]` makes ([`NodeDef`]), nodes added by name
//! ([`NodeHandle`]), and the erased form the runtime calls ([`Runner`]).

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use super::context::NodeContext;
use super::error::NodeError;
use super::naming::{NamedNode, NodeRef};
use super::output::NodeResult;
use super::payload::PayloadCodec;
use crate::future::BoxFuture;
use crate::state::GraphState;

/// How a node's body is called.
pub enum NodeFn<S: GraphState, I> {
    /// A plain function, run inline.
    Sync(fn(&I, &NodeContext) -> NodeResult<S>),
    /// An `async fn`, polled concurrently with the step's other tasks.
    Async(for<'a> fn(&'a I, &'a NodeContext) -> BoxFuture<'a, NodeResult<S>>),
}

impl<S: GraphState, I> Clone for NodeFn<S, I> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<S: GraphState, I> Copy for NodeFn<S, I> {}

/// A node made by `#[node]`: its name and body. `I` is its input: the state, or for a
/// `Send` target, its payload type.
pub struct NodeDef<S: GraphState, I = S> {
    name: &'static str,
    run: NodeFn<S, I>,
    payload_codec: fn() -> Option<PayloadCodec>,
    reads: Option<&'static [usize]>,
}

impl<S: GraphState, I> NodeDef<S, I> {
    /// Used by `#[node]`.
    #[doc(hidden)]
    pub const fn __new(
        name: &'static str,
        run: NodeFn<S, I>,
        payload_codec: fn() -> Option<PayloadCodec>,
    ) -> Self {
        Self {
            name,
            run,
            payload_codec,
            reads: None,
        }
    }

    /// Used by `#[node]` when it rejects the function's signature: a stand-in value of
    /// the node, so the graph that uses it still type-checks and the build reports only
    /// the signature. The build fails, so it never runs.
    #[doc(hidden)]
    pub const fn __rejected(name: &'static str) -> Self {
        Self::__new(name, NodeFn::Sync(rejected::<S, I>), no_payload_codec)
    }

    /// Used by `#[node(reads(..))]`: the indices of the channels the node reads.
    #[doc(hidden)]
    pub const fn __with_reads(mut self, reads: &'static [usize]) -> Self {
        self.reads = Some(reads);
        self
    }

    /// The channels the node declared it reads (`#[node(reads(..))]`), by index.
    pub const fn reads(&self) -> Option<&'static [usize]> {
        self.reads
    }

    /// The node's name.
    pub const fn name(&self) -> &'static str {
        self.name
    }
}

fn rejected<S: GraphState, I>(_: &I, _: &NodeContext) -> NodeResult<S> {
    Err(NodeError::msg(
        "this node's signature was rejected at compile time",
    ))
}

fn no_payload_codec() -> Option<PayloadCodec> {
    None
}

impl<S: GraphState, I> Clone for NodeDef<S, I> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<S: GraphState, I> Copy for NodeDef<S, I> {}

impl<S: GraphState, I> fmt::Debug for NodeDef<S, I> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NodeDef({})", self.name)
    }
}

/// A node added by name (`add_node_fn`), used like a node value in the builder.
pub struct NodeHandle<S, I = S> {
    name: Arc<str>,
    _marker: std::marker::PhantomData<fn(&I) -> S>,
}

impl<S, I> NodeHandle<S, I> {
    pub(crate) fn new(name: Arc<str>) -> Self {
        Self {
            name,
            _marker: std::marker::PhantomData,
        }
    }

    /// The node's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl<S, I> Clone for NodeHandle<S, I> {
    fn clone(&self) -> Self {
        Self::new(self.name.clone())
    }
}

impl<S, I> fmt::Debug for NodeHandle<S, I> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NodeHandle({})", self.name)
    }
}

/// A subgraph node of a graph over `S` running a graph over `C`
/// ([`StateGraph::add_subgraph`](crate::StateGraph::add_subgraph)): used like a node
/// in edges, routes and `goto` (it takes the parent's state through its input
/// mapping), and as a `Send` target whose payload is the child's update type.
pub struct SubgraphHandle<S, C: GraphState> {
    name: Arc<str>,
    _marker: std::marker::PhantomData<fn(&S, &C::Update)>,
}

impl<S, C: GraphState> SubgraphHandle<S, C> {
    pub(crate) fn new(name: Arc<str>) -> Self {
        Self {
            name,
            _marker: std::marker::PhantomData,
        }
    }

    /// Names the subgraph node `name` of a graph over `S` running a graph over `C`,
    /// where the handle `add_subgraph` returns is out of reach — typically in a
    /// child's node handing off to a sibling subgraph with `Command::parent`, which
    /// is built before the parent. The types are checked; the name is checked when
    /// the command is applied (an unknown node fails the run).
    pub fn named(name: impl Into<Arc<str>>) -> Self {
        Self::new(name.into())
    }

    /// The node's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl<S, C: GraphState> Clone for SubgraphHandle<S, C> {
    fn clone(&self) -> Self {
        Self::new(self.name.clone())
    }
}

impl<S, C: GraphState> fmt::Debug for SubgraphHandle<S, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SubgraphHandle({})", self.name)
    }
}

impl<S: GraphState, C: GraphState> NodeRef<S> for SubgraphHandle<S, C> {
    type Input = C::Update;
    fn node_name(&self) -> Arc<str> {
        self.name.clone()
    }
}

impl<S, C: GraphState> NamedNode for SubgraphHandle<S, C> {
    fn name_of(&self) -> Arc<str> {
        self.name.clone()
    }
}

impl<S, C: GraphState> NamedNode for &SubgraphHandle<S, C> {
    fn name_of(&self) -> Arc<str> {
        self.name.clone()
    }
}

impl<S: GraphState, I: Any + Send + Sync> NodeRef<S> for NodeDef<S, I> {
    type Input = I;
    fn node_name(&self) -> Arc<str> {
        Arc::from(self.name)
    }
}

impl<S: GraphState, I: Any + Send + Sync> NodeRef<S> for NodeHandle<S, I> {
    type Input = I;
    fn node_name(&self) -> Arc<str> {
        self.name.clone()
    }
}

impl<S: GraphState, N: NodeRef<S>> NodeRef<S> for &N {
    type Input = N::Input;
    fn node_name(&self) -> Arc<str> {
        (**self).node_name()
    }
}

/// Nodes that can be added to a graph: `#[node]` values.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a node of a graph over `{S}`",
    label = "this node's state type differs from the graph's",
    note = "a node of `StateGraph<{S}>` takes `&{S}` (or a `Send` payload) and returns `{S}`'s update type or `Command<{S}>`"
)]
pub trait Node<S: GraphState>: NodeRef<S> {
    /// Erases the node for the runtime.
    #[doc(hidden)]
    fn into_runner(self) -> Runner<S>;

    /// How `Send` payloads for this node are stored in checkpoints, if they can be.
    #[doc(hidden)]
    fn payload_codec(&self) -> Option<PayloadCodec> {
        None
    }

    /// The channels the node reads, by index, when it declared them; `None`: all.
    #[doc(hidden)]
    fn declared_reads(&self) -> Option<&'static [usize]> {
        None
    }
}

impl<S: GraphState, I: Any + Send + Sync> Node<S> for NodeDef<S, I> {
    fn payload_codec(&self) -> Option<PayloadCodec> {
        (self.payload_codec)()
    }

    fn declared_reads(&self) -> Option<&'static [usize]> {
        self.reads
    }

    fn into_runner(self) -> Runner<S> {
        match self.run {
            NodeFn::Sync(f) => Runner::Sync(Arc::new(move |input, ctx| {
                f(input.downcast::<I>(ctx)?, ctx)
            })),
            NodeFn::Async(f) => {
                Runner::Async(Arc::new(move |input, ctx| match input.downcast::<I>(ctx) {
                    Ok(i) => f(i, ctx),
                    Err(e) => Box::pin(std::future::ready(Err(e))),
                }))
            }
        }
    }
}

/// A task's input as the runtime holds it.
#[doc(hidden)]
pub enum TaskInput<'a, S> {
    /// The state (edge-triggered tasks).
    State(&'a S),
    /// A `Send` payload.
    Payload(&'a (dyn Any + Send + Sync)),
}

impl<S> Clone for TaskInput<'_, S> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<S> Copy for TaskInput<'_, S> {}

impl<'a, S: 'static> TaskInput<'a, S> {
    fn downcast<I: Any>(self, ctx: &NodeContext) -> Result<&'a I, NodeError> {
        let found = match self {
            TaskInput::State(s) => (s as &dyn Any).downcast_ref::<I>(),
            TaskInput::Payload(p) => p.downcast_ref::<I>(),
        };
        found.ok_or_else(|| {
            NodeError::msg(format!(
                "node `{}` expects input of type `{}`, which this task does not carry",
                ctx.node,
                std::any::type_name::<I>()
            ))
        })
    }
}

pub(crate) type SyncRunner<S> =
    dyn Fn(TaskInput<'_, S>, &NodeContext) -> NodeResult<S> + Send + Sync;
pub(crate) type AsyncRunner<S> =
    dyn for<'a> Fn(TaskInput<'a, S>, &'a NodeContext) -> BoxFuture<'a, NodeResult<S>> + Send + Sync;

/// A node erased to what the runtime calls.
#[doc(hidden)]
pub enum Runner<S: GraphState> {
    Sync(Arc<SyncRunner<S>>),
    Async(Arc<AsyncRunner<S>>),
}

impl<S: GraphState> Clone for Runner<S> {
    fn clone(&self) -> Self {
        match self {
            Runner::Sync(f) => Runner::Sync(f.clone()),
            Runner::Async(f) => Runner::Async(f.clone()),
        }
    }
}

impl<S: GraphState, I> NamedNode for NodeDef<S, I> {
    fn name_of(&self) -> Arc<str> {
        Arc::from(self.name)
    }
}

impl<S, I> NamedNode for NodeHandle<S, I> {
    fn name_of(&self) -> Arc<str> {
        self.name.clone()
    }
}

impl<S, I> NamedNode for &NodeHandle<S, I> {
    fn name_of(&self) -> Arc<str> {
        self.name.clone()
    }
}
