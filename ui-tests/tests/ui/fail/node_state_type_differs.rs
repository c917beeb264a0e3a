use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
    #[reducer(append)]
    notes: Vec<String>,
}

#[derive(GraphState, Clone, Debug, Default)]
struct Other {
    count: u32,
}

#[node]
fn count(_state: &Other) -> OtherUpdate {
    Other::update().count(1u32)
}

fn main() {
    let _ = StateGraph::<Research>::new().add_node(count).compile();
}
