use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Desk {
    question: String,
}

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
    notes: Vec<String>,
}

fn main() {
    let child = StateGraph::<Research>::new().compile().unwrap();
    let mut desk = StateGraph::<Desk>::new();
    desk.add_subgraph(Subgraph::new(
        "research",
        child,
        |d: &Desk| Research::update().topic(d.question.clone()),
        |r: &Research| Desk::update().notes(r.notes.clone()),
    ));
}
