//! Checking a declared [`StateGraph`] and indexing it for the superstep loop.

use std::collections::{HashMap, HashSet};
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
            child: n.child.clone(),
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
    let mut deferred = vec![false; nodes.len()];
    for endpoint in &spec.deferred {
        match endpoint {
            Endpoint::Node(name) if index.contains_key(name) => deferred[index[name]] = true,
            other => problems.push(BuildProblem::UnknownDeferredNode {
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
