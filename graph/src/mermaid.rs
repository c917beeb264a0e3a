//! Mermaid rendering of a compiled graph.

use std::fmt::Write as _;

use std::sync::Arc;

use crate::compile::CompiledGraph;
use crate::shape::{ChildGraph, Endpoint, Topology};
use crate::state::GraphState;

/// A node's id inside the block of subgraph `prefix` (`""` at the top).
fn id(prefix: &str, e: &Endpoint) -> String {
    let local = e.drawn_id();
    if prefix.is_empty() {
        local.to_string()
    } else {
        format!("{prefix}__{local}")
    }
}

/// Draws one graph: its nodes into `nodes`, its edges into `edges`. A subgraph node
/// becomes a `subgraph` block holding its child's graph (ids prefixed with the
/// block's, edges inside the block), recursively.
fn body(
    nodes: &mut String,
    edges: &mut String,
    prefix: &str,
    t: &Topology,
    children: &[(Arc<str>, Arc<dyn ChildGraph>)],
    indent: &str,
) {
    if !prefix.is_empty() {
        let _ = writeln!(
            nodes,
            "{indent}{}([start]):::first",
            id(prefix, &Endpoint::Start)
        );
    }
    for n in &t.nodes {
        let node_id = id(prefix, &Endpoint::Node(n.clone()));
        match children.iter().find(|(name, _)| name == n) {
            Some((_, child)) => {
                let inner = format!("{indent}\t");
                let _ = writeln!(nodes, "{indent}subgraph {node_id} [{n}]");
                let mut child_edges = String::new();
                body(
                    nodes,
                    &mut child_edges,
                    &node_id,
                    child.topology(),
                    &child.children(),
                    &inner,
                );
                nodes.push_str(&child_edges);
                let _ = writeln!(nodes, "{indent}end");
            }
            None => {
                let class = if t.deferred.contains(n) {
                    ":::deferred"
                } else {
                    ""
                };
                let _ = writeln!(nodes, "{indent}{node_id}({n}){class}");
            }
        }
    }
    if !prefix.is_empty() {
        let _ = writeln!(
            nodes,
            "{indent}{}([end]):::last",
            id(prefix, &Endpoint::End)
        );
    }
    for (sources, target) in &t.edges {
        let from: Vec<String> = sources.iter().map(|e| id(prefix, e)).collect();
        let _ = writeln!(
            edges,
            "{indent}{} --> {};",
            from.join(" & "),
            id(prefix, target)
        );
    }
    for (source, declared) in &t.branches {
        for target in declared {
            let _ = writeln!(
                edges,
                "{indent}{} -.-> {};",
                id(prefix, source),
                id(prefix, target)
            );
        }
    }
}

impl<S: GraphState> CompiledGraph<S> {
    /// The graph as a Mermaid flowchart: plain edges solid, conditional edges dashed to
    /// each declared target, joins as `a & b --> c`, deferred nodes
    /// ([`StateGraph::defer`](crate::StateGraph::defer)) in the `deferred` class (a
    /// dashed outline). A subgraph node is a `subgraph` block drawing its child graph
    /// inside (LangGraph's `xray`), its nodes' ids prefixed with the block's
    /// (`research__search`); edges to the node go to the block.
    pub fn draw_mermaid(&self) -> String {
        let g = &self.graph;
        let mut out = String::from("graph TD;\n");
        out.push_str("\t__start__([START]):::first\n");
        let children = g.children();
        let (mut nodes, mut edges) = (String::new(), String::new());
        body(&mut nodes, &mut edges, "", &g.topology, &children, "\t");
        out.push_str(&nodes);
        out.push_str("\t__end__([END]):::last\n");
        out.push_str(&edges);
        out.push_str("\tclassDef first fill-opacity:0\n\tclassDef last fill:#bfb6fc\n");
        if nodes.contains(":::deferred\n") {
            out.push_str("\tclassDef deferred stroke-dasharray:5 5\n");
        }
        out
    }
}
