use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
    #[reducer(append)]
    notes: Vec<String>,
}

struct Planner;

impl Planner {
    #[node]
    fn plan(&self, _state: &Research) -> ResearchUpdate {
        Research::update()
    }
}

fn main() {}
