//! `draw_mermaid`: solid arrows for edges, dashed arrows to each declared target of a
//! conditional edge, `a & b --> c` for joins.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Doc {
    #[reducer(append)]
    trace: Vec<String>,
}

#[node]
fn draft(_s: &Doc) -> DocUpdate {
    Doc::update()
}

#[node]
fn review(_s: &Doc) -> DocUpdate {
    Doc::update()
}

#[node]
fn lint(_s: &Doc) -> DocUpdate {
    Doc::update()
}

#[node]
fn publish(_s: &Doc) -> DocUpdate {
    Doc::update()
}

#[test]
fn mermaid_shows_edges_joins_and_conditional_targets() {
    let graph = StateGraph::<Doc>::new()
        .add_node(draft)
        .add_node(review)
        .add_node(lint)
        .add_node(publish)
        .add_edge(START, draft)
        .add_edge(draft, review)
        .add_edge(draft, lint)
        .add_edge([review, lint], publish)
        .add_conditional_edges(publish, |_: &Doc| Route::end(), (draft, END))
        .compile()
        .unwrap();
    let chart = graph.draw_mermaid();
    let lines: Vec<&str> = chart.lines().map(str::trim).collect();
    assert_eq!(lines[0], "graph TD;");
    for expected in [
        "__start__([START]):::first",
        "__end__([END]):::last",
        "draft(draft)",
        "publish(publish)",
        "__start__ --> draft;",
        "draft --> review;",
        "draft --> lint;",
        "review & lint --> publish;",
        "publish -.-> draft;",
        "publish -.-> __end__;",
    ] {
        assert!(
            lines.contains(&expected),
            "missing `{expected}` in\n{chart}"
        );
    }
    // Conditional targets are never drawn solid, plain edges never dashed.
    assert!(!lines.contains(&"publish --> draft;"), "{chart}");
    assert!(!lines.contains(&"draft -.-> review;"), "{chart}");
    assert_eq!(chart.matches("-.->").count(), 2, "{chart}");
    assert_eq!(chart.matches("-->").count(), 4, "{chart}");
}
