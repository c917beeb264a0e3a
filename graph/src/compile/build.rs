//! Checking a declared [`StateGraph`] and indexing it for the superstep loop.

use std::collections::{HashMap, HashSet};
use std::panic::Location;
use std::sync::Arc;

use super::error::{BuildError, BuildProblem};
use super::graph::{Branch, CompiledGraph, CompiledNode, Graph, Join};
use super::options::CompileOptions;
use crate::builder::{Endpoint, StateGraph};
use crate::shape::Topology;
use crate::state::GraphState;

impl<S: GraphState> StateGraph<S> {
    /// Checks the graph and makes it runnable.
    ///
    /// # Errors
    /// A [`BuildError`] listing every problem found.
    pub fn compile(&self) -> Result<CompiledGraph<S>, BuildError> {
        compile(self, CompileOptions::new())
    }

    /// Checks the graph and makes it runnable with `options` (a checkpointer, ...).
    ///
    /// # Errors
    /// A [`BuildError`] listing every problem found.
    pub fn compile_with(&self, options: CompileOptions) -> Result<CompiledGraph<S>, BuildError> {
        compile(self, options)
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

/// The passes of [`compile`], each pushing the problems it finds: names and nodes,
/// per-node options, edges and joins, conditional edges, breakpoints.
struct Passes<'a, S: GraphState> {
    spec: &'a StateGraph<S>,
    problems: Vec<BuildProblem>,
    /// Node index by name (nodes are indexed by name order).
    index: HashMap<Arc<str>, usize>,
    /// The declaration of each indexed node.
    unique: Vec<usize>,
    nodes: Vec<CompiledNode<S>>,
}

pub(crate) fn compile<S: GraphState>(
    spec: &StateGraph<S>,
    options: CompileOptions,
) -> Result<CompiledGraph<S>, BuildError> {
    let mut passes = Passes::names_and_nodes(spec);
    passes.reads();
    passes.caches_and_retries(&options);
    let deferred = passes.deferred();
    let (start_edges, joins) = passes.edges();
    let start_branches = passes.branches();
    for n in &mut passes.nodes {
        n.edges.sort_unstable();
        n.edges.dedup();
    }
    let interrupt_before = passes.breakpoints(&options.interrupt_before, "before");
    let interrupt_after = passes.breakpoints(&options.interrupt_after, "after");
    let Passes {
        mut problems,
        index,
        nodes,
        ..
    } = passes;
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
        deferred: nodes
            .iter()
            .zip(&deferred)
            .filter(|(_, d)| **d)
            .map(|(n, _)| n.name.clone())
            .collect(),
    };
    let has_subgraphs = nodes.iter().any(|n| n.child.is_some());
    let deferred = deferred.contains(&true).then(|| Arc::from(deferred));
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
            store: options.store,
            migrations: options.migrations,
            interrupt_before,
            interrupt_after,
            deferred,
            version: Arc::from(version),
            schema_version: Arc::from(S::SCHEMA_VERSION),
            save_batch_hint: std::sync::atomic::AtomicUsize::new(0),
            has_subgraphs,
            shape_record: std::sync::OnceLock::new(),
        }),
    })
}

impl<'a, S: GraphState> Passes<'a, S> {
    /// Checks the names and indexes the nodes. Problems are reported in declaration
    /// order; indices follow node names.
    fn names_and_nodes(spec: &'a StateGraph<S>) -> Self {
        let mut problems = Vec::new();
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
        let mut nodes: Vec<CompiledNode<S>> = Vec::new();
        for &i in &unique {
            let n = &spec.nodes[i];
            index.insert(n.name.clone(), nodes.len());
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
                child: n.child.clone(),
            });
        }
        Passes {
            spec,
            problems,
            index,
            unique,
            nodes,
        }
    }

    /// The node of `endpoint`, if it names one.
    fn node(&self, endpoint: &Endpoint) -> Option<usize> {
        match endpoint {
            Endpoint::Node(name) => self.index.get(name).copied(),
            _ => None,
        }
    }

    /// The channels each node reads, where declared apart from the node.
    fn reads(&mut self) {
        let mut declared: HashMap<usize, Vec<usize>> = HashMap::new();
        for (endpoint, channel) in &self.spec.reads {
            match self.node(endpoint) {
                Some(i) => declared.entry(i).or_default().push(*channel),
                None => self.problems.push(BuildProblem::UnknownCacheNode {
                    name: endpoint.to_string(),
                }),
            }
        }
        for (i, mut channels) in declared {
            channels.extend(self.spec.nodes[self.unique[i]].reads.into_iter().flatten());
            channels.sort_unstable();
            channels.dedup();
            self.nodes[i].reads = channels;
        }
    }

    /// Each node's cache and retry policies.
    fn caches_and_retries(&mut self, options: &CompileOptions) {
        for (endpoint, policy) in &self.spec.cache {
            match self.node(endpoint) {
                Some(i) => self.nodes[i].cache = Some(policy.clone()),
                None => self.problems.push(BuildProblem::UnknownCacheNode {
                    name: endpoint.to_string(),
                }),
            }
        }
        if options.cache.is_none()
            && let Some(n) = self.nodes.iter().find(|n| n.cache.is_some())
        {
            self.problems.push(BuildProblem::MissingCacheStore {
                name: n.name.to_string(),
            });
        }
        for (endpoint, policy) in &self.spec.retry {
            match self.node(endpoint) {
                Some(i) => self.nodes[i].retry = Some(policy.clone()),
                None => self.problems.push(BuildProblem::UnknownRetryNode {
                    name: endpoint.to_string(),
                }),
            }
        }
    }

    /// Which nodes are deferred.
    fn deferred(&mut self) -> Vec<bool> {
        let mut deferred = vec![false; self.nodes.len()];
        for endpoint in &self.spec.deferred {
            match self.node(endpoint) {
                Some(i) => deferred[i] = true,
                None => self.problems.push(BuildProblem::UnknownDeferredNode {
                    name: endpoint.to_string(),
                }),
            }
        }
        deferred
    }

    /// Plain edges onto their source nodes (or `START`'s), joins apart.
    fn edges(&mut self) -> (Vec<usize>, Vec<Join>) {
        let spec = self.spec;
        let mut start_edges = Vec::new();
        let mut joins = Vec::new();
        for ((sources, target), at) in spec.edges.iter().zip(&spec.edge_sites) {
            let Some(target_idx) = self.edge_target(sources, target, at) else {
                continue;
            };
            let Some(mut source_idx) = self.edge_sources(sources, target, at) else {
                continue;
            };
            if sources.len() > 1 {
                let join = joins.len();
                source_idx.sort_unstable();
                source_idx.dedup();
                for &s in &source_idx {
                    self.nodes[s].joins.push(join);
                }
                joins.push(Join {
                    sources: source_idx,
                    target: target_idx,
                });
            } else if let Some(t) = target_idx {
                match source_idx.first() {
                    Some(&s) => self.nodes[s].edges.push(t),
                    None => start_edges.push(t),
                }
            }
        }
        start_edges.sort_unstable();
        start_edges.dedup();
        (start_edges, joins)
    }

    /// An edge's target: `Some(None)` for `END`, `None` when it names no node.
    fn edge_target(
        &mut self,
        sources: &[Endpoint],
        target: &Endpoint,
        at: &Location<'_>,
    ) -> Option<Option<usize>> {
        let Endpoint::Node(name) = target else {
            return Some(None);
        };
        let source_text = sources
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        let Some(&t) = self.index.get(name) else {
            self.problems.push(BuildProblem::UnknownTarget {
                source_node: source_text,
                target: name.to_string(),
                added_at: at.to_string(),
            });
            return None;
        };
        if !self.nodes[t].takes_state {
            self.problems.push(BuildProblem::EdgeToPayloadNode {
                source_node: source_text,
                target: name.to_string(),
            });
        }
        Some(Some(t))
    }

    /// An edge's source nodes (none for `START`); `None` when one is wrong.
    fn edge_sources(
        &mut self,
        sources: &[Endpoint],
        target: &Endpoint,
        at: &Location<'_>,
    ) -> Option<Vec<usize>> {
        let mut source_idx = Vec::new();
        let mut bad = false;
        for s in sources {
            match s {
                Endpoint::Start if sources.len() > 1 => {
                    self.problems.push(BuildProblem::StartInJoin);
                    bad = true;
                }
                Endpoint::Start | Endpoint::End => {}
                Endpoint::Node(name) => match self.index.get(name) {
                    Some(&i) => source_idx.push(i),
                    None => {
                        self.problems.push(BuildProblem::UnknownSource {
                            source_node: name.to_string(),
                            target: target.to_string(),
                            added_at: at.to_string(),
                        });
                        bad = true;
                    }
                },
            }
        }
        (!bad).then_some(source_idx)
    }

    /// Conditional edges onto their source nodes; `START`'s returned.
    fn branches(&mut self) -> Vec<Branch<S>> {
        let spec = self.spec;
        let mut start_branches = Vec::new();
        for b in &spec.branches {
            let mut declared = Vec::new();
            let mut declares_end = false;
            for t in &b.declared {
                match t {
                    Endpoint::End => declares_end = true,
                    Endpoint::Start => {}
                    Endpoint::Node(name) => match self.index.get(name) {
                        Some(&i) => declared.push(i),
                        None => self.problems.push(BuildProblem::UnknownRouteTarget {
                            source_node: b.source.to_string(),
                            target: name.to_string(),
                            added_at: b.added_at.to_string(),
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
                Endpoint::Node(name) => match self.index.get(name) {
                    Some(&i) => self.nodes[i].branches.push(branch),
                    None => self.problems.push(BuildProblem::UnknownSource {
                        source_node: name.to_string(),
                        target: "<conditional edge>".into(),
                        added_at: b.added_at.to_string(),
                    }),
                },
            }
        }
        start_branches
    }

    /// The nodes of `interrupt_before`/`_after`.
    fn breakpoints(&mut self, names: &[Arc<str>], when: &'static str) -> Vec<usize> {
        let mut found = Vec::new();
        for n in names {
            match self.index.get(n) {
                Some(&i) => found.push(i),
                None => self.problems.push(BuildProblem::UnknownInterruptNode {
                    when,
                    name: n.to_string(),
                }),
            }
        }
        found
    }
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
    // Only graphs with deferred nodes have these lines: other graphs keep the
    // version they had before `defer` existed.
    let deferred: std::collections::BTreeSet<String> =
        spec.deferred.iter().map(|n| format!("defer {n}")).collect();
    lines.extend(deferred);
    lines.sort();
    let text = format!("stategraph-graph v1\n{}\n", lines.join("\n"));
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
