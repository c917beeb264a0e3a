//! `StateGraph<S>`: declaring nodes, edges, joins and conditional edges.

use std::panic::Location;
use std::sync::Arc;

use crate::cache::CachePolicy;
use crate::node::PayloadCodec;
use crate::node::{
    End, Goto, Node, NodeContext, NodeDef, NodeError, NodeHandle, NodeReturn, Route, Runner, Start,
    SubgraphHandle, TaskInput,
};
use crate::retry::RetryPolicy;
pub use crate::shape::Endpoint;
use crate::state::{ChannelKey, GraphState};

/// One edge source: `START` or a node.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the source of an edge in a graph over `{S}`",
    label = "expected `START`, a node, or several of them for a join",
    note = "a join waits for several sources: `add_edge([a, b], c)` or `add_edge((a, b), c)`"
)]
pub trait IntoSources<S> {
    /// The sources (more than one: a join).
    fn into_sources(self) -> Vec<Endpoint>;
}

/// One edge target: a node taking the state, or `END`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the target of an edge in a graph over `{S}`",
    label = "expected a node taking `&{S}`, or `END`",
    note = "a node whose input is a payload is reached with `stategraph::Send::new(node, payload)` from a router or command"
)]
pub trait IntoTarget<S> {
    /// The target.
    fn into_target(self) -> Endpoint;
}

/// The declared destinations of a conditional edge: nodes (any input), `END`, or
/// several as an array or tuple.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a declared route target in a graph over `{S}`",
    label = "expected a node, `END`, or an array or tuple of them"
)]
pub trait IntoDeclared<S> {
    /// The declared targets.
    fn into_declared(self) -> Vec<Endpoint>;
}

impl<S> IntoSources<S> for Start {
    fn into_sources(self) -> Vec<Endpoint> {
        vec![Endpoint::Start]
    }
}
impl<S> IntoDeclared<S> for End {
    fn into_declared(self) -> Vec<Endpoint> {
        vec![Endpoint::End]
    }
}
impl<S> IntoTarget<S> for End {
    fn into_target(self) -> Endpoint {
        Endpoint::End
    }
}
impl<S: GraphState> IntoTarget<S> for NodeDef<S, S> {
    fn into_target(self) -> Endpoint {
        Endpoint::Node(Arc::from(self.name()))
    }
}
impl<S: GraphState> IntoTarget<S> for NodeHandle<S, S> {
    fn into_target(self) -> Endpoint {
        Endpoint::Node(Arc::from(self.name()))
    }
}
impl<S: GraphState, C: GraphState> IntoTarget<S> for SubgraphHandle<S, C> {
    fn into_target(self) -> Endpoint {
        Endpoint::Node(Arc::from(self.name()))
    }
}

impl<S: GraphState, C: GraphState> IntoTarget<S> for &SubgraphHandle<S, C> {
    fn into_target(self) -> Endpoint {
        Endpoint::Node(Arc::from(self.name()))
    }
}

impl<S: GraphState> IntoTarget<S> for &NodeHandle<S, S> {
    fn into_target(self) -> Endpoint {
        Endpoint::Node(Arc::from(self.name()))
    }
}

/// A single node of a graph over `S` (of any input type), or `END`: the elements of
/// the multi-node impls, so every node in a tuple or array is checked against `S`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a node of a graph over `{S}`",
    label = "a node of another state type is in this list",
    note = "every node of `StateGraph<{S}>` takes `&{S}` (or a `Send` payload) and returns `{S}`'s update type or `Command<{S}>`"
)]
trait NodeName<S> {
    /// The endpoint this node is.
    fn endpoint(&self) -> Endpoint;
}
impl<S: GraphState, I> NodeName<S> for NodeDef<S, I> {
    fn endpoint(&self) -> Endpoint {
        Endpoint::Node(Arc::from(self.name()))
    }
}
impl<S, I> NodeName<S> for NodeHandle<S, I> {
    fn endpoint(&self) -> Endpoint {
        Endpoint::Node(Arc::from(self.name()))
    }
}
impl<S, I> NodeName<S> for &NodeHandle<S, I> {
    fn endpoint(&self) -> Endpoint {
        Endpoint::Node(Arc::from(self.name()))
    }
}
impl<S, C: GraphState> NodeName<S> for SubgraphHandle<S, C> {
    fn endpoint(&self) -> Endpoint {
        Endpoint::Node(Arc::from(self.name()))
    }
}
impl<S, C: GraphState> NodeName<S> for &SubgraphHandle<S, C> {
    fn endpoint(&self) -> Endpoint {
        Endpoint::Node(Arc::from(self.name()))
    }
}
impl<S> NodeName<S> for End {
    fn endpoint(&self) -> Endpoint {
        Endpoint::End
    }
}

macro_rules! single_node_impls {
    ($($ty:ty => [$($g:tt)*]),* $(,)?) => {$(
        impl<$($g)*> IntoSources<S> for $ty {
            fn into_sources(self) -> Vec<Endpoint> {
                vec![NodeName::<S>::endpoint(&self)]
            }
        }
        impl<$($g)*> IntoDeclared<S> for $ty {
            fn into_declared(self) -> Vec<Endpoint> {
                vec![NodeName::<S>::endpoint(&self)]
            }
        }
        impl<$($g)*, const N: usize> IntoSources<S> for [$ty; N] {
            fn into_sources(self) -> Vec<Endpoint> {
                self.iter().map(NodeName::<S>::endpoint).collect()
            }
        }
        impl<$($g)*, const N: usize> IntoDeclared<S> for [$ty; N] {
            fn into_declared(self) -> Vec<Endpoint> {
                self.iter().map(NodeName::<S>::endpoint).collect()
            }
        }
    )*};
}
single_node_impls! {
    NodeDef<S, I> => [S: GraphState, I],
    NodeHandle<S, I> => [S, I],
    &NodeHandle<S, I> => [S, I],
    SubgraphHandle<S, C> => [S, C: GraphState],
    &SubgraphHandle<S, C> => [S, C: GraphState],
}

impl<S, const N: usize> IntoDeclared<S> for [End; N] {
    fn into_declared(self) -> Vec<Endpoint> {
        self.iter().map(NodeName::<S>::endpoint).collect()
    }
}

macro_rules! tuple_impls {
    ($($name:ident)+) => {
        #[allow(non_snake_case)]
        impl<S, $($name: NodeName<S>),+> IntoSources<S> for ($($name,)+) {
            fn into_sources(self) -> Vec<Endpoint> {
                let ($($name,)+) = self;
                vec![$(NodeName::<S>::endpoint(&$name)),+]
            }
        }
        #[allow(non_snake_case)]
        impl<S, $($name: NodeName<S>),+> IntoDeclared<S> for ($($name,)+) {
            fn into_declared(self) -> Vec<Endpoint> {
                let ($($name,)+) = self;
                vec![$(NodeName::<S>::endpoint(&$name)),+]
            }
        }
    };
}
tuple_impls!(A B);
tuple_impls!(A B C);
tuple_impls!(A B C D);
tuple_impls!(A B C D E);
tuple_impls!(A B C D E F);

pub(crate) type Router<S> = Arc<dyn Fn(&S) -> Route<S> + Send + Sync>;

pub(crate) struct NodeSpec<S: GraphState> {
    pub(crate) name: Arc<str>,
    pub(crate) runner: Runner<S>,
    pub(crate) takes_state: bool,
    pub(crate) payload_codec: Option<PayloadCodec>,
    /// Declared reads (channel indices); `None`: every channel.
    pub(crate) reads: Option<&'static [usize]>,
    /// The graph this node runs, when it is a subgraph.
    pub(crate) child: Option<Arc<dyn crate::shape::ChildGraph>>,
}

pub(crate) struct BranchSpec<S> {
    pub(crate) source: Endpoint,
    pub(crate) router: Router<S>,
    pub(crate) declared: Vec<Endpoint>,
    /// Where the user's code added it, for `compile`'s problems.
    pub(crate) added_at: &'static Location<'static>,
}

/// Declares a graph over state `S`; `compile` checks it and makes it runnable.
///
/// Builder methods take `&mut self` and return it, so a graph is declared in one
/// chained expression or step by step.
///
/// ```
/// use stategraph::prelude::*;
///
/// #[derive(GraphState, Clone, Debug, Default)]
/// struct Count {
///     #[reducer(add)]
///     n: u32,
/// }
///
/// #[node]
/// fn one(_: &Count) -> CountUpdate {
///     Count::update().n(1)
/// }
///
/// #[node]
/// fn ten(_: &Count) -> CountUpdate {
///     Count::update().n(10)
/// }
///
/// let graph = StateGraph::<Count>::new()
///     .add_node(one)
///     .add_node(ten)
///     .add_edge(START, one)
///     .add_conditional_edges(one, |c: &Count| if c.n < 5 { Route::to(ten) } else { Route::end() }, (ten, END))
///     .add_edge(ten, END)
///     .compile()?;
/// let out = graph.invoke_blocking(Count::update(), &RunConfig::new())?;
/// assert_eq!(out.values.n, 11);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct StateGraph<S: GraphState> {
    pub(crate) nodes: Vec<NodeSpec<S>>,
    pub(crate) edges: Vec<(Vec<Endpoint>, Endpoint)>,
    /// Where the user's code added each edge (beside `edges`), for `compile`'s
    /// problems.
    pub(crate) edge_sites: Vec<&'static Location<'static>>,
    pub(crate) branches: Vec<BranchSpec<S>>,
    /// Retry policies in declaration order.
    pub(crate) retry: Vec<(Endpoint, RetryPolicy)>,
    pub(crate) cache: Vec<(Endpoint, CachePolicy)>,
    pub(crate) reads: Vec<(Endpoint, usize)>,
    /// Nodes marked with [`StateGraph::defer`].
    pub(crate) deferred: Vec<Endpoint>,
}

impl<S: GraphState> Default for StateGraph<S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S: GraphState> StateGraph<S> {
    /// An empty graph.
    pub fn new() -> Self {
        Self {
            nodes: Vec::new(),
            edges: Vec::new(),
            edge_sites: Vec::new(),
            branches: Vec::new(),
            retry: Vec::new(),
            cache: Vec::new(),
            reads: Vec::new(),
            deferred: Vec::new(),
        }
    }

    /// Adds a node made with `#[node]`.
    pub fn add_node<N: Node<S>>(&mut self, node: N) -> &mut Self {
        let name = node.node_name();
        let takes_state = std::any::TypeId::of::<N::Input>() == std::any::TypeId::of::<S>();
        let payload_codec = node.payload_codec();
        let reads = node.declared_reads();
        self.nodes.push(NodeSpec {
            name,
            runner: node.into_runner(),
            takes_state,
            payload_codec,
            reads,
            child: None,
        });
        self
    }

    /// Adds a node from a closure over the state and returns a handle that names it in
    /// edges, routes and `goto`.
    pub fn add_node_fn<F, R>(&mut self, name: impl Into<Arc<str>>, f: F) -> NodeHandle<S>
    where
        F: Fn(&S) -> R + Send + Sync + 'static,
        R: NodeReturn<State = S>,
    {
        self.add_node_fn_ctx(name, move |s: &S, _: &NodeContext| f(s))
    }

    /// [`StateGraph::add_node_fn`] for a closure that also takes the task's
    /// [`NodeContext`]: it can `interrupt`, `emit` and read its step and attempt like a
    /// `#[node]` function. The name may be any string the graph accepts (not only a
    /// Rust identifier).
    ///
    /// ```
    /// use serde_json::json;
    /// use stategraph::prelude::*;
    ///
    /// #[derive(GraphState, Clone, Debug, Default)]
    /// struct Ticket {
    ///     approved_by: Option<String>,
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut graph = StateGraph::<Ticket>::new();
    /// let review = graph.add_node_fn_ctx("human review", |_: &Ticket, ctx: &NodeContext| {
    ///     let who: String = ctx.interrupt(json!({ "step": ctx.step() }))?;
    ///     Ok::<_, NodeError>(Ticket::update().approved_by(Some(who)))
    /// });
    /// graph.add_edge(START, review);
    /// let graph = graph.compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))?;
    /// let thread = RunConfig::new().thread("t-1");
    /// let paused = graph.invoke(Ticket::update(), &thread).await?;
    /// assert_eq!(paused.interrupts[0].node, "human review");
    /// let done = graph.invoke(Command::resume("ada"), &thread).await?;
    /// assert_eq!(done.values.approved_by.as_deref(), Some("ada"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn add_node_fn_ctx<F, R>(&mut self, name: impl Into<Arc<str>>, f: F) -> NodeHandle<S>
    where
        F: Fn(&S, &NodeContext) -> R + Send + Sync + 'static,
        R: NodeReturn<State = S>,
    {
        let name: Arc<str> = name.into();
        let runner = Runner::Sync(Arc::new(
            move |input: TaskInput<'_, S>, ctx: &NodeContext| {
                let state = match input {
                    TaskInput::State(s) => Some(s),
                    TaskInput::Payload(p) => p.downcast_ref::<S>(),
                };
                match state {
                    Some(s) => f(s, ctx).into_output(),
                    None => Err(NodeError::msg(format!(
                        "node `{}` takes the state; its `Send` payload is of another type",
                        ctx.node()
                    ))),
                }
            },
        ));
        self.push_state_node(name.clone(), runner);
        NodeHandle::new(name)
    }

    /// Adds a node of `name` taking the state, run by `runner`.
    pub(crate) fn push_state_node(&mut self, name: Arc<str>, runner: Runner<S>) {
        self.nodes.push(NodeSpec {
            name,
            runner,
            takes_state: true,
            payload_codec: None,
            reads: None,
            child: None,
        });
    }

    /// Adds an edge. One source: the target runs in the superstep after the source
    /// ran. Several sources (`[a, b]` or `(a, b)`): a join — the target runs once after
    /// all of them ran, even in different supersteps.
    #[track_caller]
    pub fn add_edge(&mut self, from: impl IntoSources<S>, to: impl IntoTarget<S>) -> &mut Self {
        self.edges.push((from.into_sources(), to.into_target()));
        self.edge_sites.push(Location::caller());
        self
    }

    /// Adds a conditional edge: after `source` runs, `router` picks the next nodes (or
    /// `END`, or `Send`s) from the state as the source's task left it. Every route must
    /// be one of `declared`; any other is a run error.
    #[track_caller]
    pub fn add_conditional_edges<R, F>(
        &mut self,
        source: impl IntoSources<S>,
        router: F,
        declared: impl IntoDeclared<S>,
    ) -> &mut Self
    where
        F: Fn(&S) -> R + Send + Sync + 'static,
        R: Into<Route<S>>,
    {
        let router: Router<S> = Arc::new(move |s: &S| router(s).into());
        let declared = declared.into_declared();
        let added_at = Location::caller();
        for source in source.into_sources() {
            self.branches.push(BranchSpec {
                source,
                router: router.clone(),
                declared: declared.clone(),
                added_at,
            });
        }
        self
    }

    /// Shorthand for `add_edge(START, node)`.
    #[track_caller]
    pub fn set_entry_point(&mut self, node: impl IntoTarget<S>) -> &mut Self {
        self.edges.push((vec![Endpoint::Start], node.into_target()));
        self.edge_sites.push(Location::caller());
        self
    }

    /// Shorthand for `add_edge(node, END)`.
    #[track_caller]
    pub fn set_finish_point(&mut self, node: impl IntoSources<S>) -> &mut Self {
        self.edges.push((node.into_sources(), Endpoint::End));
        self.edge_sites.push(Location::caller());
        self
    }

    /// Retries `node` on error according to `policy`.
    pub fn retry(&mut self, node: impl IntoSources<S>, policy: RetryPolicy) -> &mut Self {
        for endpoint in node.into_sources() {
            self.retry.push((endpoint, policy.clone()));
        }
        self
    }

    /// Defers `node` (LangGraph's `defer=True`): once triggered — by an edge, a join, a
    /// route, a `goto` or a `Send` — it waits while any task of a node that is not
    /// deferred is due, and runs in the first superstep in which none is: the fan-in
    /// of branches of different lengths.
    ///
    /// - Edge, route and `goto` triggers that arrive while it waits give one run;
    ///   each `Send` to it is a task of its own, and they all run in that step.
    /// - Deferred nodes pending at the same time run together.
    /// - A waiting trigger is part of the thread's checkpoint: an interrupt or a
    ///   crash before the deferred run neither loses nor repeats it. While it waits,
    ///   [`StateSnapshot::next`](crate::StateSnapshot::next) leaves it out (it does
    ///   not run next) and [`StateSnapshot::deferred`](crate::StateSnapshot::deferred)
    ///   lists it.
    /// - The steps it waits are ordinary steps of other nodes: the recursion limit
    ///   counts them as usual.
    ///
    /// Without `defer`, a node reached by two branches of different lengths runs once
    /// per branch.
    ///
    /// ```
    /// use stategraph::prelude::*;
    ///
    /// #[derive(GraphState, Clone, Debug, Default)]
    /// struct Trail {
    ///     #[reducer(append)]
    ///     seen: Vec<String>,
    /// }
    ///
    /// let mut g = StateGraph::<Trail>::new();
    /// let mut step = |name: &'static str| {
    ///     g.add_node_fn(name, move |_: &Trail| Trail::update().seen([name.to_uppercase()]))
    /// };
    /// let (a, b, b_2, c, d) = (step("a"), step("b"), step("b_2"), step("c"), step("d"));
    /// g.add_edge(START, &a)
    ///     .add_edge(&a, &b)
    ///     .add_edge(&a, &c)
    ///     .add_edge(&b, &b_2)
    ///     .add_edge(&b_2, &d)
    ///     .add_edge(&c, &d)
    ///     .add_edge(&d, END)
    ///     .defer(&d);
    /// let out = g.compile()?.invoke_blocking(Trail::update(), &RunConfig::new())?;
    /// // `c` reached `d` a step before `b_2` did; `d` ran once, after both.
    /// assert_eq!(out.values.seen, ["A", "B", "C", "B_2", "D"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn defer(&mut self, node: impl IntoSources<S>) -> &mut Self {
        self.deferred.extend(node.into_sources());
        self
    }

    /// Reuses `node`'s recorded writes instead of calling it while its inputs are
    /// unchanged (see [`cache`](crate::cache)); the graph needs a cache store
    /// ([`CompileOptions::cache`](crate::CompileOptions::cache)).
    ///
    /// ```
    /// use stategraph::prelude::*;
    /// use stategraph::cache::{CachePolicy, InMemoryCache};
    ///
    /// #[derive(GraphState, Clone, Debug, Default)]
    /// struct Doc {
    ///     text: String,
    ///     words: usize,
    /// }
    ///
    /// #[node(reads(text))]
    /// fn count(doc: &Doc) -> DocUpdate {
    ///     Doc::update().words(doc.text.split_whitespace().count())
    /// }
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let graph = StateGraph::<Doc>::new()
    ///     .add_node(count)
    ///     .add_edge(START, count)
    ///     .cache(count, CachePolicy::new())
    ///     .compile_with(CompileOptions::new().cache(InMemoryCache::new()))?;
    /// let thread = RunConfig::new().thread("doc");
    /// graph.invoke_blocking(Doc::update().text("a b c"), &thread)?;
    /// // The same text again: `count` is served from the cache.
    /// let again = graph.invoke_blocking(Doc::update().text("a b c"), &thread)?;
    /// assert_eq!(again.values.words, 3);
    /// # Ok(())
    /// # }
    /// ```
    pub fn cache(&mut self, node: impl IntoSources<S>, policy: CachePolicy) -> &mut Self {
        for endpoint in node.into_sources() {
            self.cache.push((endpoint, policy.clone()));
        }
        self
    }

    /// Declares that `node` reads the channel `key` (call once per channel): what its
    /// cache watches. A node that declares nothing, here or with
    /// `#[node(reads(..))]`, reads every channel, so any change makes it stale.
    ///
    /// ```
    /// use stategraph::prelude::*;
    ///
    /// #[derive(GraphState, Clone, Debug, Default)]
    /// struct Doc {
    ///     text: String,
    ///     words: usize,
    /// }
    ///
    /// let mut g = StateGraph::<Doc>::new();
    /// let count = g.add_node_fn("count", |d: &Doc| {
    ///     Doc::update().words(d.text.split_whitespace().count())
    /// });
    /// g.reads(&count, Doc::TEXT);
    /// ```
    pub fn reads<T>(&mut self, node: impl IntoSources<S>, key: ChannelKey<S, T>) -> &mut Self {
        for endpoint in node.into_sources() {
            self.reads.push((endpoint, key.index()));
        }
        self
    }
}

impl<S: GraphState> Goto<S> {
    pub(crate) fn endpoint(&self) -> Endpoint {
        match self {
            Goto::Node(n) => Endpoint::Node(n.clone()),
            Goto::End => Endpoint::End,
            Goto::Send(s) => Endpoint::Node(s.node.clone()),
        }
    }
}
