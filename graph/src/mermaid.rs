//! Mermaid rendering of a compiled graph.

use std::fmt::Write as _;

use crate::builder::Endpoint;
use crate::compile::CompiledGraph;
use crate::state::GraphState;

fn id(e: &Endpoint) -> String {
    match e {
        Endpoint::Start => "__start__".into(),
        Endpoint::End => "__end__".into(),
        Endpoint::Node(n) => n.to_string(),
    }
}

impl<S: GraphState> CompiledGraph<S> {
    /// The graph as a Mermaid flowchart: plain edges solid, conditional edges dashed to
    /// each declared target, joins as `a & b --> c`, deferred nodes
    /// ([`StateGraph::defer`](crate::StateGraph::defer)) in the `deferred` class (a
    /// dashed outline).
    pub fn draw_mermaid(&self) -> String {
        let t = &self.graph.topology;
        let mut out = String::from("graph TD;\n");
        out.push_str("\t__start__([START]):::first\n");
        for n in &t.nodes {
            let class = if t.deferred.contains(n) {
                ":::deferred"
            } else {
                ""
            };
            let _ = writeln!(out, "\t{n}({n}){class}");
        }
        out.push_str("\t__end__([END]):::last\n");
        for (sources, target) in &t.edges {
            let from: Vec<String> = sources.iter().map(id).collect();
            let _ = writeln!(out, "\t{} --> {};", from.join(" & "), id(target));
        }
        for (source, declared) in &t.branches {
            for target in declared {
                let _ = writeln!(out, "\t{} -.-> {};", id(source), id(target));
            }
        }
        out.push_str("\tclassDef first fill-opacity:0\n\tclassDef last fill:#bfb6fc\n");
        if !t.deferred.is_empty() {
            out.push_str("\tclassDef deferred stroke-dasharray:5 5\n");
        }
        out
    }
}
