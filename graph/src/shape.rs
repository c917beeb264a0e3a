//! The declared shape of a graph, below the builder and the compiled form: edge
//! ends ([`Endpoint`]), the topology kept for drawing, and what a parent graph knows
//! of a subgraph (its shape, and how to read its state).

use std::any::Any;
use std::sync::Arc;

use crate::checkpoint::CheckpointSaver;
use crate::future::BoxFuture;

/// One end of an edge.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Endpoint {
    /// The graph's entry.
    Start,
    /// The graph's exit.
    End,
    /// A node, by name.
    Node(Arc<str>),
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::Start => f.write_str("START"),
            Endpoint::End => f.write_str("END"),
            Endpoint::Node(n) => f.write_str(n),
        }
    }
}

impl Endpoint {
    /// The id a drawing gives this end inside its graph: LangGraph's `__start__` and
    /// `__end__`, or the node's name.
    pub(crate) fn drawn_id(&self) -> &str {
        match self {
            Endpoint::Start => "__start__",
            Endpoint::End => "__end__",
            Endpoint::Node(n) => n,
        }
    }
}

/// The declared shape, kept for drawing.
pub(crate) struct Topology {
    pub(crate) nodes: Vec<Arc<str>>,
    pub(crate) edges: Vec<(Vec<Endpoint>, Endpoint)>,
    pub(crate) branches: Vec<(Endpoint, Vec<Endpoint>)>,
    /// The deferred nodes, sorted.
    pub(crate) deferred: Vec<Arc<str>>,
}

/// What a parent needs of a subgraph beyond running it (which its node's runner
/// does): its shape, for drawing. Implemented for every compiled graph.
pub(crate) trait ChildGraph: Send + Sync + 'static {
    /// The child's declared shape.
    fn topology(&self) -> &Topology;
    /// The child's graph version (a digest of its topology).
    fn version(&self) -> &str;
    /// The child's own subgraphs, by node name.
    fn children(&self) -> Vec<(Arc<str>, Arc<dyn ChildGraph>)>;
    /// The child's compiled graph, to be downcast to its state's type.
    fn as_any(&self) -> &dyn Any;
    /// The child's state at its latest checkpoint in namespace `ns` of `thread`, as
    /// the runtime's `Result<Option<SubgraphState>, RunError>` (erased here, below
    /// the runtime).
    fn inspect<'a>(
        &'a self,
        saver: Arc<dyn CheckpointSaver>,
        thread: &'a str,
        ns: String,
    ) -> BoxFuture<'a, Box<dyn Any + Send>>;
}
