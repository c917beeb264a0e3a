//! The declared topology as data ([`CompiledGraph::shape`]): what a web page needs
//! to draw a graph, serializable to JSON.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::compile::{CompiledGraph, Graph};
use crate::shape::{ChildGraph, Endpoint};
use crate::state::GraphState;

/// A graph's declared topology: its nodes (with `START` and `END`) and edges, each
/// subgraph node carrying its child's shape. See [`CompiledGraph::shape`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GraphShape {
    /// The graph's version ([`CompiledGraph::graph_version`]).
    pub version: String,
    /// `__start__` first, the nodes in the order they were added, `__end__` last.
    pub nodes: Vec<ShapeNode>,
    /// Plain edges in the order they were declared, then conditional ones.
    pub edges: Vec<ShapeEdge>,
}

/// A node of a [`GraphShape`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShapeNode {
    /// The node's name; `__start__` and `__end__` for the graph's entry and exit.
    pub id: String,
    /// What the node is.
    pub kind: ShapeNodeKind,
    /// Deferred ([`StateGraph::defer`](crate::StateGraph::defer)): it runs once the
    /// rest of the graph is done.
    pub deferred: bool,
    /// A subgraph node's own graph.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub subgraph: Option<Box<GraphShape>>,
}

/// What a [`ShapeNode`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShapeNodeKind {
    /// The graph's entry, `__start__`.
    Start,
    /// The graph's exit, `__end__`.
    End,
    /// A node running a function.
    Node,
    /// A node running a subgraph ([`ShapeNode::subgraph`] holds its shape).
    Subgraph,
}

/// An edge of a [`GraphShape`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShapeEdge {
    /// The node the edge leaves.
    pub source: String,
    /// The node it goes to.
    pub target: String,
    /// Declared by a conditional edge: one of the targets its router may choose.
    pub conditional: bool,
    /// The other sources when this edge is part of a join (a multi-source edge), sorted.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub join: Vec<String>,
}

/// The shape of `g`, its subgraphs' recursively.
fn shape_of(g: &dyn ChildGraph) -> GraphShape {
    let t = g.topology();
    let children = g.children();
    let end = |id: &str, kind| ShapeNode {
        id: id.to_string(),
        kind,
        deferred: false,
        subgraph: None,
    };
    let mut nodes = Vec::with_capacity(t.nodes.len() + 2);
    nodes.push(end(Endpoint::Start.drawn_id(), ShapeNodeKind::Start));
    for n in &t.nodes {
        let child = children.iter().find(|(name, _)| name == n);
        nodes.push(ShapeNode {
            id: n.to_string(),
            kind: match child {
                Some(_) => ShapeNodeKind::Subgraph,
                None => ShapeNodeKind::Node,
            },
            deferred: t.deferred.contains(n),
            subgraph: child.map(|(_, c): &(Arc<str>, _)| Box::new(shape_of(&**c))),
        });
    }
    nodes.push(end(Endpoint::End.drawn_id(), ShapeNodeKind::End));
    let mut edges = Vec::new();
    for (sources, target) in &t.edges {
        for source in sources {
            let mut join: Vec<String> = sources
                .iter()
                .filter(|s| *s != source)
                .map(|s| s.drawn_id().to_string())
                .collect();
            join.sort();
            edges.push(ShapeEdge {
                source: source.drawn_id().to_string(),
                target: target.drawn_id().to_string(),
                conditional: false,
                join,
            });
        }
    }
    for (source, declared) in &t.branches {
        edges.extend(declared.iter().map(|target| ShapeEdge {
            source: source.drawn_id().to_string(),
            target: target.drawn_id().to_string(),
            conditional: true,
            join: Vec::new(),
        }));
    }
    GraphShape {
        version: g.version().to_string(),
        nodes,
        edges,
    }
}

/// `g`'s shape as checkpoints record it: its JSON text, serialized once per compiled
/// graph and kept as one string, so recording it costs one copy (a JSON tree of a
/// hundred nodes costs hundreds of allocations to copy and to free).
pub(crate) fn recorded<S: GraphState>(g: &Graph<S>) -> &serde_json::Value {
    g.shape_record.get_or_init(|| {
        // A shape is strings and booleans: serializing it cannot fail.
        serde_json::Value::String(serde_json::to_string(&shape_of(g)).unwrap_or_default())
    })
}

impl<S: GraphState> CompiledGraph<S> {
    /// The declared topology as data, for drawing (in a web page, say): the nodes
    /// with `__start__` and `__end__`, plain edges, one `conditional` edge per
    /// declared target of each conditional edge, a join's edges naming the join's
    /// other sources, and each subgraph node carrying its child's shape. The same
    /// graph [`draw_mermaid`](Self::draw_mermaid) draws.
    ///
    /// ```
    /// use stategraph::prelude::*;
    /// use stategraph::{ShapeEdge, ShapeNodeKind};
    ///
    /// #[derive(GraphState, Clone, Debug, Default)]
    /// struct Doc { text: String }
    ///
    /// #[node]
    /// fn write(_: &Doc) -> DocUpdate { Doc::update().text("hi") }
    ///
    /// let mut g = StateGraph::<Doc>::new();
    /// g.add_node(write).add_edge(START, write).add_edge(write, END);
    /// let graph = g.compile()?;
    /// let shape = graph.shape();
    /// assert_eq!(shape.version, graph.graph_version());
    /// let ids: Vec<_> = shape.nodes.iter().map(|n| n.id.as_str()).collect();
    /// assert_eq!(ids, ["__start__", "write", "__end__"]);
    /// assert_eq!(shape.nodes[1].kind, ShapeNodeKind::Node);
    /// assert_eq!(
    ///     shape.edges[0],
    ///     ShapeEdge { source: "__start__".into(), target: "write".into(), conditional: false, join: vec![] }
    /// );
    /// let json = serde_json::to_value(&shape)?;
    /// assert_eq!(json["nodes"][0]["kind"], "start");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn shape(&self) -> GraphShape {
        shape_of(&*self.graph)
    }
}
