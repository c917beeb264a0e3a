//! The compiled form: [`CompiledGraph`] and the indexed topology the runtime walks.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use super::options::Migration;
use crate::builder::Router;
use crate::cache::{CachePolicy, NodeCache};
use crate::checkpoint::CheckpointSaver;
use crate::node::{PayloadCodec, Runner};
use crate::retry::RetryPolicy;
use crate::shape::ChildGraph;
use crate::shape::Topology;
use crate::state::GraphState;
use crate::store::Store;

pub(crate) struct Branch<S> {
    pub(crate) router: Router<S>,
    /// Declared node targets (indices) and whether `END` is declared.
    pub(crate) declared: Vec<usize>,
    pub(crate) declares_end: bool,
    pub(crate) declared_names: Vec<String>,
}

pub(crate) struct Join {
    pub(crate) sources: Vec<usize>,
    pub(crate) target: Option<usize>,
}

pub(crate) struct CompiledNode<S: GraphState> {
    pub(crate) payload_codec: Option<PayloadCodec>,
    pub(crate) name: Arc<str>,
    pub(crate) runner: Runner<S>,
    pub(crate) edges: Vec<usize>,
    pub(crate) branches: Vec<Branch<S>>,
    pub(crate) joins: Vec<usize>,
    pub(crate) retry: Option<RetryPolicy>,
    pub(crate) takes_state: bool,
    pub(crate) cache: Option<CachePolicy>,
    /// The channels it reads (declared, else every channel), by index.
    pub(crate) reads: Vec<usize>,
    /// The graph it runs, when it is a subgraph.
    pub(crate) child: Option<Arc<dyn ChildGraph>>,
}

pub(crate) struct Graph<S: GraphState> {
    /// Sorted by name, so a node's index is its place in the deterministic task order.
    pub(crate) nodes: Vec<CompiledNode<S>>,
    pub(crate) index: HashMap<Arc<str>, usize>,
    pub(crate) start_edges: Vec<usize>,
    pub(crate) start_branches: Vec<Branch<S>>,
    pub(crate) joins: Vec<Join>,
    pub(crate) topology: Topology,
    pub(crate) saver: Option<Arc<dyn CheckpointSaver>>,
    pub(crate) cache: Option<Arc<dyn NodeCache>>,
    /// What `NodeContext::store` hands to nodes.
    pub(crate) store: Option<Arc<dyn Store>>,
    pub(crate) migrations: HashMap<String, Migration>,
    /// Static breakpoints (node indices).
    pub(crate) interrupt_before: Vec<usize>,
    pub(crate) interrupt_after: Vec<usize>,
    /// Per node, whether it is deferred ([`StateGraph::defer`](crate::StateGraph::defer));
    /// `None` when no node is, so a step of such a graph never looks.
    pub(crate) deferred: Option<Arc<[bool]>>,
    /// SHA-256 (hex) of the topology; see [`CompiledGraph::graph_version`].
    pub(crate) version: Arc<str>,
    /// `S::SCHEMA_VERSION`, shared by every checkpoint the graph writes.
    pub(crate) schema_version: Arc<str>,
    /// The size of the last batch of background saves of the last run: the next
    /// run's save queue reserves that much up front instead of growing (and
    /// copying) its ops.
    pub(crate) save_batch_hint: std::sync::atomic::AtomicUsize,
    /// Whether a node is a subgraph (its tasks then get the run's scope).
    pub(crate) has_subgraphs: bool,
    /// The graph's shape as JSON, made by the first checkpoint that records it (see
    /// [`GRAPH_SHAPE_KEY`](crate::checkpoint::GRAPH_SHAPE_KEY)) and kept for the
    /// next ones.
    pub(crate) shape_record: std::sync::OnceLock<serde_json::Value>,
}

/// A checked, runnable graph. Cheap to clone; share it across tasks and threads.
///
/// Made by [`StateGraph::compile`](crate::StateGraph::compile) or
/// [`compile_with`](crate::StateGraph::compile_with); run it with
/// [`invoke`](CompiledGraph::invoke) or [`stream`](CompiledGraph::stream), and with a
/// checkpointer read and edit its threads with [`get_state`](CompiledGraph::get_state),
/// [`get_state_history`](CompiledGraph::get_state_history) and
/// [`update_state`](CompiledGraph::update_state).
///
/// ```
/// use stategraph::prelude::*;
///
/// #[derive(GraphState, Clone, Debug, Default)]
/// struct Hits {
///     #[reducer(add)]
///     n: u64,
/// }
///
/// #[node]
/// fn hit(_: &Hits) -> HitsUpdate {
///     Hits::update().n(1)
/// }
///
/// let graph = StateGraph::<Hits>::new().add_node(hit).add_edge(START, hit).compile()?;
/// let workers: Vec<_> = (0..4)
///     .map(|_| {
///         let graph = graph.clone();
///         std::thread::spawn(move || graph.invoke_blocking(Hits::update(), &RunConfig::new()))
///     })
///     .collect();
/// for worker in workers {
///     assert_eq!(worker.join().expect("no panic")?.values.n, 1);
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct CompiledGraph<S: GraphState> {
    pub(crate) graph: Arc<Graph<S>>,
}

impl<S: GraphState> Clone for CompiledGraph<S> {
    fn clone(&self) -> Self {
        Self {
            graph: self.graph.clone(),
        }
    }
}

impl<S: GraphState> fmt::Debug for CompiledGraph<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompiledGraph")
            .field("nodes", &self.graph.topology.nodes)
            .finish_non_exhaustive()
    }
}

impl<S: GraphState> CompiledGraph<S> {
    /// SHA-256 (hex) of the graph's topology: its node names, edges, joins,
    /// conditional edges with their declared targets and deferred nodes, in a
    /// canonical order. Stored in
    /// every checkpoint, so a thread's history shows which version of the graph
    /// wrote each step.
    pub fn graph_version(&self) -> &str {
        &self.graph.version
    }

    /// The node names, sorted.
    pub fn node_names(&self) -> impl Iterator<Item = &str> {
        self.graph.nodes.iter().map(|n| &*n.name)
    }
}
