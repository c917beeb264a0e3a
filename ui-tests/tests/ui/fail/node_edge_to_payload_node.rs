use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
    #[reducer(append)]
    notes: Vec<String>,
}

#[node]
fn fan(_state: &Research) -> ResearchUpdate {
    Research::update()
}

#[node]
async fn worker(item: &u32) -> ResearchUpdate {
    Research::update().notes([item.to_string()])
}

fn main() {
    let _ = StateGraph::<Research>::new()
        .add_node(fan)
        .add_node(worker)
        .add_edge(START, fan)
        .add_edge(fan, worker)
        .compile();
}
