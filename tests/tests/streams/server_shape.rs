//! `CompiledGraph::shape`: the declared topology as data for drawing — plain,
//! conditional and join edges, deferred nodes, and subgraphs with their own shape —
//! and its JSON form.

use serde_json::json;
use stategraph::prelude::*;
use stategraph::{GraphShape, ShapeEdge, ShapeNode, ShapeNodeKind};

#[derive(GraphState, Clone, Debug, Default)]
struct Doc {
    #[reducer(append)]
    trace: Vec<String>,
}

#[derive(GraphState, Clone, Debug, Default)]
struct Spelling {
    text: String,
}

#[node]
fn spell(_: &Spelling) -> SpellingUpdate {
    Spelling::update()
}

#[node]
fn draft(_: &Doc) -> DocUpdate {
    Doc::update()
}

#[node]
fn review(_: &Doc) -> DocUpdate {
    Doc::update()
}

#[node]
fn lint(_: &Doc) -> DocUpdate {
    Doc::update()
}

#[node]
fn publish(_: &Doc) -> DocUpdate {
    Doc::update()
}

#[node]
fn archive(_: &Doc) -> DocUpdate {
    Doc::update()
}

fn spelling_graph() -> CompiledGraph<Spelling> {
    StateGraph::<Spelling>::new()
        .add_node(spell)
        .add_edge(START, spell)
        .add_edge(spell, END)
        .compile()
        .unwrap()
}

/// `check` (a subgraph) → `draft` → `review` & `lint` → join → `publish`, which
/// routes to the deferred `archive` or the end.
fn doc_graph() -> CompiledGraph<Doc> {
    let mut g = StateGraph::<Doc>::new();
    let check = g.add_subgraph(Subgraph::new(
        "check",
        spelling_graph(),
        |_: &Doc| Spelling::update(),
        |_: &Spelling| Doc::update(),
    ));
    g.add_node(draft)
        .add_node(review)
        .add_node(lint)
        .add_node(publish)
        .add_node(archive)
        .add_edge(START, &check)
        .add_edge(&check, draft)
        .add_edge(draft, review)
        .add_edge(draft, lint)
        .add_edge([review, lint], publish)
        .add_conditional_edges(publish, |_: &Doc| Route::end(), (archive, END))
        .add_edge(archive, END)
        .defer(archive);
    g.compile().unwrap()
}

fn node(id: &str, kind: ShapeNodeKind) -> ShapeNode {
    ShapeNode {
        id: id.into(),
        kind,
        deferred: false,
        subgraph: None,
    }
}

fn edge(source: &str, target: &str) -> ShapeEdge {
    ShapeEdge {
        source: source.into(),
        target: target.into(),
        conditional: false,
        join: Vec::new(),
    }
}

#[test]
fn shape_lists_nodes_edges_joins_branches_deferred_nodes_and_subgraphs() {
    let graph = doc_graph();
    let child = GraphShape {
        version: spelling_graph().graph_version().to_string(),
        nodes: vec![
            node("__start__", ShapeNodeKind::Start),
            node("spell", ShapeNodeKind::Node),
            node("__end__", ShapeNodeKind::End),
        ],
        edges: vec![edge("__start__", "spell"), edge("spell", "__end__")],
    };
    let expected = GraphShape {
        version: graph.graph_version().to_string(),
        nodes: vec![
            node("__start__", ShapeNodeKind::Start),
            ShapeNode {
                subgraph: Some(Box::new(child)),
                ..node("check", ShapeNodeKind::Subgraph)
            },
            node("draft", ShapeNodeKind::Node),
            node("review", ShapeNodeKind::Node),
            node("lint", ShapeNodeKind::Node),
            node("publish", ShapeNodeKind::Node),
            ShapeNode {
                deferred: true,
                ..node("archive", ShapeNodeKind::Node)
            },
            node("__end__", ShapeNodeKind::End),
        ],
        edges: vec![
            edge("__start__", "check"),
            edge("check", "draft"),
            edge("draft", "review"),
            edge("draft", "lint"),
            ShapeEdge {
                join: vec!["lint".into()],
                ..edge("review", "publish")
            },
            ShapeEdge {
                join: vec!["review".into()],
                ..edge("lint", "publish")
            },
            edge("archive", "__end__"),
            ShapeEdge {
                conditional: true,
                ..edge("publish", "archive")
            },
            ShapeEdge {
                conditional: true,
                ..edge("publish", "__end__")
            },
        ],
    };
    assert_eq!(graph.shape(), expected);
}

#[test]
fn shape_json_round_trips_and_leaves_out_empty_fields() {
    let shape = doc_graph().shape();
    let value = serde_json::to_value(&shape).unwrap();
    // START and a plain node: no `subgraph` key; a plain edge: no `join` key.
    assert_eq!(
        value["nodes"][0],
        json!({"id": "__start__", "kind": "start", "deferred": false})
    );
    assert_eq!(value["nodes"][1]["kind"], "subgraph");
    assert_eq!(value["nodes"][1]["subgraph"]["nodes"][1]["id"], "spell");
    assert_eq!(value["nodes"][6]["deferred"], true);
    assert_eq!(
        value["edges"][0],
        json!({"source": "__start__", "target": "check", "conditional": false})
    );
    assert_eq!(value["edges"][4]["join"], json!(["lint"]));
    let back: GraphShape = serde_json::from_value(value).unwrap();
    assert_eq!(back, shape);
}

#[test]
fn a_join_of_three_names_the_other_two_sorted() {
    let graph = StateGraph::<Doc>::new()
        .add_node(draft)
        .add_node(review)
        .add_node(lint)
        .add_node(publish)
        .add_edge(START, draft)
        .add_edge(START, review)
        .add_edge(START, lint)
        .add_edge([review, lint, draft], publish)
        .add_edge(publish, END)
        .compile()
        .unwrap();
    let shape = graph.shape();
    let into_publish: Vec<(&str, Vec<String>)> = shape
        .edges
        .iter()
        .filter(|e| e.target == "publish")
        .map(|e| (e.source.as_str(), e.join.clone()))
        .collect();
    assert_eq!(
        into_publish,
        [
            ("review", vec!["draft".to_string(), "lint".to_string()]),
            ("lint", vec!["draft".to_string(), "review".to_string()]),
            ("draft", vec!["lint".to_string(), "review".to_string()]),
        ]
    );
}
