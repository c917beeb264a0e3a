use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
    #[reducer(append)]
    notes: Vec<String>,
}

#[node]
fn plan(_state: &Research) -> ResearchUpdate {
    Research::update()
}

fn main() {
    let _ = StateGraph::<Research>::new()
        .add_node(plan)
        .add_edge(START, plan)
        .add_conditional_edges(plan, |_: &Research| Route::to(43u32), (plan, END))
        .compile();
}
