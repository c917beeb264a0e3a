//! A second parameter written as a full path to a type that is not `NodeContext`.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
}

#[node]
async fn plan(_state: &Research, _config: &stategraph::RunConfig) -> ResearchUpdate {
    Research::update()
}

fn main() {}
