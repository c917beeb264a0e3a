//! Turning a declared `StateGraph` into a runnable `CompiledGraph`: every problem is
//! collected into one `BuildError`, and the topology is indexed for the superstep loop.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

use crate::builder::{Endpoint, Router, StateGraph};
use crate::cache::{CachePolicy, NodeCache};
use crate::checkpoint::CheckpointSaver;
use crate::node::{PayloadCodec, Runner};
use crate::retry::RetryPolicy;
use crate::state::GraphState;

/// One problem found by `compile`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildProblem {
    /// Nothing leaves `START`.
    #[error(
        "no edge leaves START: add `add_edge(START, <first node>)` or a conditional edge from START"
    )]
    NoEntry,
    /// Two nodes share a name.
    #[error("node `{name}` is added more than once: node names must be unique")]
    DuplicateNode {
        /// The name.
        name: String,
    },
    /// A node name the graph reserves.
    #[error("node name `{name}` is reserved for the graph's START/END: rename the node")]
    ReservedName {
        /// The name.
        name: String,
    },
    /// A node name with a character used in task paths and channel keys.
    #[error("node name `{name}` contains `{character}`, which node names cannot contain")]
    InvalidCharacter {
        /// The name.
        name: String,
        /// The offending character.
        character: char,
    },
    /// An empty node name.
    #[error("a node has an empty name")]
    EmptyName,
    /// An edge starts at a node that was never added.
    #[error(
        "edge from `{source_node}` to `{target}`: `{source_node}` is not a node of this graph; add it with `add_node`"
    )]
    UnknownSource {
        /// The missing source.
        source_node: String,
        /// The edge's target.
        target: String,
    },
    /// An edge ends at a node that was never added.
    #[error(
        "edge from `{source_node}` to `{target}`: `{target}` is not a node of this graph; add it with `add_node`"
    )]
    UnknownTarget {
        /// The edge's source.
        source_node: String,
        /// The missing target.
        target: String,
    },
    /// A conditional edge declares a target that was never added.
    #[error(
        "conditional edge from `{source_node}` declares target `{target}`, which is not a node of this graph"
    )]
    UnknownRouteTarget {
        /// The router's source.
        source_node: String,
        /// The missing target.
        target: String,
    },
    /// An edge targets a node whose input is a `Send` payload.
    #[error(
        "edge from `{source_node}` to `{target}`: `{target}` takes a `Send` payload, not the state; reach it with `stategraph::Send::new`"
    )]
    EdgeToPayloadNode {
        /// The edge's source.
        source_node: String,
        /// The payload node.
        target: String,
    },
    /// `START` inside a join.
    #[error("a join cannot wait for START: join sources must be nodes")]
    StartInJoin,
    /// A breakpoint names a node that was never added.
    #[error("interrupt {when} `{name}`, which is not a node of this graph")]
    UnknownInterruptNode {
        /// `before` or `after`.
        when: &'static str,
        /// The name.
        name: String,
    },
    /// A retry policy for a node that was never added.
    #[error("retry policy for `{name}`, which is not a node of this graph")]
    UnknownRetryNode {
        /// The name.
        name: String,
    },
    /// A cache policy or declared reads for a node that was never added.
    #[error("cache policy or reads for `{name}`, which is not a node of this graph")]
    UnknownCacheNode {
        /// The name.
        name: String,
    },
    /// Nodes have cache policies but the graph has no cache store.
    #[error(
        "`{name}` has a cache policy but the graph has no cache store: compile with \
         `CompileOptions::cache(..)` (e.g. `InMemoryCache::new()` or a durable saver)"
    )]
    MissingCacheStore {
        /// The first such node.
        name: String,
    },
}

/// The graph could not be compiled; `problems` lists everything found.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the graph has {} problem{}:{}", problems.len(), if problems.len() == 1 { "" } else { "s" }, ListProblems(problems))]
pub struct BuildError {
    /// Every problem, in declaration order.
    pub problems: Vec<BuildProblem>,
}

struct ListProblems<'a>(&'a [BuildProblem]);

impl fmt::Display for ListProblems<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for p in self.0 {
            write!(f, "\n  - {p}")?;
        }
        Ok(())
    }
}

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
    pub(crate) migrations: HashMap<String, Migration>,
    /// Static breakpoints (node indices).
    pub(crate) interrupt_before: Vec<usize>,
    pub(crate) interrupt_after: Vec<usize>,
    /// SHA-256 (hex) of the topology; see [`CompiledGraph::graph_version`].
    pub(crate) version: Arc<str>,
    /// `S::SCHEMA_VERSION`, shared by every checkpoint the graph writes.
    pub(crate) schema_version: Arc<str>,
    /// The size of the last batch of background saves of the last run: the next
    /// run's save queue reserves that much up front instead of growing (and
    /// copying) its ops.
    pub(crate) save_batch_hint: std::sync::atomic::AtomicUsize,
}

/// Maps the channel values of a checkpoint written under an older schema (by channel
/// name, as JSON) to the current state's channels.
pub type Migration = Arc<
    dyn Fn(&mut serde_json::Map<String, serde_json::Value>) -> Result<(), String> + Send + Sync,
>;

/// Options of [`StateGraph::compile_with`].
#[derive(Clone, Default)]
pub struct CompileOptions {
    pub(crate) saver: Option<Arc<dyn CheckpointSaver>>,
    pub(crate) cache: Option<Arc<dyn NodeCache>>,
    pub(crate) migrations: HashMap<String, Migration>,
    pub(crate) interrupt_before: Vec<Arc<str>>,
    pub(crate) interrupt_after: Vec<Arc<str>>,
}

impl CompileOptions {
    /// No checkpointer.
    pub fn new() -> Self {
        Self::default()
    }

    /// Saves a checkpoint per superstep to `saver`; runs then need a thread id.
    #[must_use]
    pub fn checkpointer(mut self, saver: impl CheckpointSaver) -> Self {
        self.saver = Some(Arc::new(saver));
        self
    }

    /// Loads checkpoints written under schema version `from` (an older
    /// `GraphState::SCHEMA_VERSION`) by passing their channel values, by name and as
    /// JSON, through `migrate`, which edits them into the current shape (rename, add,
    /// drop, convert). The first checkpoint saved afterwards stores every channel
    /// whole under the current schema; older checkpoints stay as they were.
    #[must_use]
    pub fn migration(
        mut self,
        from: impl Into<String>,
        migrate: impl Fn(&mut serde_json::Map<String, serde_json::Value>) -> Result<(), String>
        + Send
        + Sync
        + 'static,
    ) -> Self {
        self.migrations.insert(from.into(), Arc::new(migrate));
        self
    }

    /// Pauses every run before these nodes run (static breakpoints); continue with
    /// `invoke(None, ..)` or a resume.
    #[must_use]
    pub fn interrupt_before<N: crate::node::NamedNode>(
        mut self,
        nodes: impl IntoIterator<Item = N>,
    ) -> Self {
        self.interrupt_before
            .extend(nodes.into_iter().map(|n| n.name_of()));
        self
    }

    /// Pauses every run after these nodes ran.
    #[must_use]
    pub fn interrupt_after<N: crate::node::NamedNode>(
        mut self,
        nodes: impl IntoIterator<Item = N>,
    ) -> Self {
        self.interrupt_after
            .extend(nodes.into_iter().map(|n| n.name_of()));
        self
    }

    /// As [`CompileOptions::checkpointer`], sharing a saver already behind an `Arc`.
    #[must_use]
    pub fn shared_checkpointer(mut self, saver: Arc<dyn CheckpointSaver>) -> Self {
        self.saver = Some(saver);
        self
    }

    /// Where nodes with a [`CachePolicy`] keep their recorded runs
    /// ([`InMemoryCache`](crate::cache::InMemoryCache), or a durable saver).
    #[must_use]
    pub fn cache(mut self, store: impl NodeCache) -> Self {
        self.cache = Some(Arc::new(store));
        self
    }

    /// Like [`cache`](Self::cache), with a store the caller keeps a handle to.
    #[must_use]
    pub fn shared_cache(mut self, store: Arc<dyn NodeCache>) -> Self {
        self.cache = Some(store);
        self
    }
}

impl fmt::Debug for CompileOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompileOptions")
            .field("checkpointer", &self.saver.is_some())
            .field("cache", &self.cache.is_some())
            .field("migrations", &self.migrations.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// The declared shape, kept for drawing.
pub(crate) struct Topology {
    pub(crate) nodes: Vec<Arc<str>>,
    pub(crate) edges: Vec<(Vec<Endpoint>, Endpoint)>,
    pub(crate) branches: Vec<(Endpoint, Vec<Endpoint>)>,
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
    /// SHA-256 (hex) of the graph's topology: its node names, edges, joins and
    /// conditional edges with their declared targets, in a canonical order. Stored in
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

fn check_name(name: &str, problems: &mut Vec<BuildProblem>) {
    if name.is_empty() {
        problems.push(BuildProblem::EmptyName);
        return;
    }
    let bare = name.trim_matches('_').to_ascii_lowercase();
    if bare == "start" || bare == "end" {
        problems.push(BuildProblem::ReservedName { name: name.into() });
    }
    for character in ['|', ':'] {
        if name.contains(character) {
            problems.push(BuildProblem::InvalidCharacter {
                name: name.into(),
                character,
            });
        }
    }
}

pub(crate) fn compile<S: GraphState>(
    spec: &StateGraph<S>,
    options: CompileOptions,
) -> Result<CompiledGraph<S>, BuildError> {
    let mut problems = Vec::new();

    // Problems are reported in declaration order; indices follow node names.
    let mut seen = HashSet::new();
    let mut unique: Vec<usize> = Vec::new();
    for (i, n) in spec.nodes.iter().enumerate() {
        check_name(&n.name, &mut problems);
        if seen.insert(n.name.clone()) {
            unique.push(i);
        } else {
            problems.push(BuildProblem::DuplicateNode {
                name: n.name.to_string(),
            });
        }
    }
    unique.sort_by(|&a, &b| spec.nodes[a].name.cmp(&spec.nodes[b].name));
    let mut index: HashMap<Arc<str>, usize> = HashMap::new();
    let mut takes_state = Vec::new();
    let mut nodes: Vec<CompiledNode<S>> = Vec::new();
    for &i in &unique {
        let n = &spec.nodes[i];
        index.insert(n.name.clone(), nodes.len());
        takes_state.push(n.takes_state);
        nodes.push(CompiledNode {
            payload_codec: n.payload_codec,
            name: n.name.clone(),
            runner: n.runner.clone(),
            edges: Vec::new(),
            branches: Vec::new(),
            joins: Vec::new(),
            retry: None,
            takes_state: n.takes_state,
            cache: None,
            reads: n
                .reads
                .map_or_else(|| (0..S::CHANNELS.len()).collect(), <[usize]>::to_vec),
        });
    }
    let mut declared: HashMap<usize, Vec<usize>> = HashMap::new();
    for (endpoint, channel) in &spec.reads {
        match endpoint {
            Endpoint::Node(name) if index.contains_key(name) => {
                declared.entry(index[name]).or_default().push(*channel);
            }
            other => problems.push(BuildProblem::UnknownCacheNode {
                name: other.to_string(),
            }),
        }
    }
    for (i, mut channels) in declared {
        channels.extend(spec.nodes[unique[i]].reads.into_iter().flatten());
        channels.sort_unstable();
        channels.dedup();
        nodes[i].reads = channels;
    }
    for (endpoint, policy) in &spec.cache {
        match endpoint {
            Endpoint::Node(name) if index.contains_key(name) => {
                let i = index[name];
                nodes[i].cache = Some(policy.clone());
            }
            other => problems.push(BuildProblem::UnknownCacheNode {
                name: other.to_string(),
            }),
        }
    }
    if options.cache.is_none()
        && let Some(n) = nodes.iter().find(|n| n.cache.is_some())
    {
        problems.push(BuildProblem::MissingCacheStore {
            name: n.name.to_string(),
        });
    }
    for (endpoint, policy) in &spec.retry {
        match endpoint {
            Endpoint::Node(name) if index.contains_key(name) => {
                let i = index[name];
                nodes[i].retry = Some(policy.clone());
            }
            other => problems.push(BuildProblem::UnknownRetryNode {
                name: other.to_string(),
            }),
        }
    }

    let mut start_edges = Vec::new();
    let mut joins = Vec::new();
    for (sources, target) in &spec.edges {
        let source_text = sources
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        let target_idx = match target {
            Endpoint::End => None,
            Endpoint::Start => None,
            Endpoint::Node(name) => match index.get(name) {
                Some(&t) => {
                    if !takes_state[t] {
                        problems.push(BuildProblem::EdgeToPayloadNode {
                            source_node: source_text.clone(),
                            target: name.to_string(),
                        });
                    }
                    Some(t)
                }
                None => {
                    problems.push(BuildProblem::UnknownTarget {
                        source_node: source_text.clone(),
                        target: name.to_string(),
                    });
                    continue;
                }
            },
        };
        let mut source_idx = Vec::new();
        let mut bad = false;
        for s in sources {
            match s {
                Endpoint::Start if sources.len() > 1 => {
                    problems.push(BuildProblem::StartInJoin);
                    bad = true;
                }
                Endpoint::Start | Endpoint::End => {}
                Endpoint::Node(name) => match index.get(name) {
                    Some(&i) => source_idx.push(i),
                    None => {
                        problems.push(BuildProblem::UnknownSource {
                            source_node: name.to_string(),
                            target: target.to_string(),
                        });
                        bad = true;
                    }
                },
            }
        }
        if bad {
            continue;
        }
        if sources.len() > 1 {
            let join = joins.len();
            source_idx.sort_unstable();
            source_idx.dedup();
            for &s in &source_idx {
                nodes[s].joins.push(join);
            }
            joins.push(Join {
                sources: source_idx,
                target: target_idx,
            });
        } else if let Some(t) = target_idx {
            match source_idx.first() {
                Some(&s) => nodes[s].edges.push(t),
                None => start_edges.push(t),
            }
        }
    }

    let mut start_branches = Vec::new();
    for b in &spec.branches {
        let mut declared = Vec::new();
        let mut declares_end = false;
        for t in &b.declared {
            match t {
                Endpoint::End => declares_end = true,
                Endpoint::Start => {}
                Endpoint::Node(name) => match index.get(name) {
                    Some(&i) => declared.push(i),
                    None => problems.push(BuildProblem::UnknownRouteTarget {
                        source_node: b.source.to_string(),
                        target: name.to_string(),
                    }),
                },
            }
        }
        let branch = Branch {
            router: b.router.clone(),
            declared,
            declares_end,
            declared_names: b.declared.iter().map(ToString::to_string).collect(),
        };
        match &b.source {
            Endpoint::Start => start_branches.push(branch),
            Endpoint::End => {}
            Endpoint::Node(name) => match index.get(name) {
                Some(&i) => nodes[i].branches.push(branch),
                None => problems.push(BuildProblem::UnknownSource {
                    source_node: name.to_string(),
                    target: "<conditional edge>".into(),
                }),
            },
        }
    }
    for n in &mut nodes {
        n.edges.sort_unstable();
        n.edges.dedup();
    }
    start_edges.sort_unstable();
    start_edges.dedup();
    let mut breakpoints = |names: &[Arc<str>], when: &'static str| -> Vec<usize> {
        names
            .iter()
            .filter_map(|n| match index.get(n) {
                Some(&i) => Some(i),
                None => {
                    problems.push(BuildProblem::UnknownInterruptNode {
                        when,
                        name: n.to_string(),
                    });
                    None
                }
            })
            .collect()
    };
    let interrupt_before = breakpoints(&options.interrupt_before, "before");
    let interrupt_after = breakpoints(&options.interrupt_after, "after");
    if start_edges.is_empty() && start_branches.is_empty() {
        problems.insert(0, BuildProblem::NoEntry);
    }
    if !problems.is_empty() {
        return Err(BuildError { problems });
    }
    let version = topology_version(spec);
    let topology = Topology {
        nodes: spec.nodes.iter().map(|n| n.name.clone()).collect(),
        edges: spec.edges.clone(),
        branches: spec
            .branches
            .iter()
            .map(|b| (b.source.clone(), b.declared.clone()))
            .collect(),
    };
    Ok(CompiledGraph {
        graph: Arc::new(Graph {
            nodes,
            index,
            start_edges,
            start_branches,
            joins,
            topology,
            saver: options.saver,
            cache: options.cache,
            migrations: options.migrations,
            interrupt_before,
            interrupt_after,
            version: Arc::from(version),
            schema_version: Arc::from(S::SCHEMA_VERSION),
            save_batch_hint: std::sync::atomic::AtomicUsize::new(0),
        }),
    })
}

/// The canonical text of a topology, hashed: one line per node, edge and conditional
/// edge, each list sorted, so declaration order does not matter.
fn topology_version<S: GraphState>(spec: &StateGraph<S>) -> String {
    use sha2::{Digest, Sha256};
    let mut lines: Vec<String> = spec
        .nodes
        .iter()
        .map(|n| format!("node {}", n.name))
        .collect();
    for (sources, target) in &spec.edges {
        let mut sources: Vec<String> = sources.iter().map(ToString::to_string).collect();
        sources.sort();
        lines.push(format!("edge {} -> {target}", sources.join(",")));
    }
    for b in &spec.branches {
        let mut targets: Vec<String> = b.declared.iter().map(ToString::to_string).collect();
        targets.sort();
        lines.push(format!("branch {} -> {}", b.source, targets.join(",")));
    }
    lines.sort();
    let text = format!("stategraph-graph v1\n{}\n", lines.join("\n"));
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
