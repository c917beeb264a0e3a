//! A misspelled reducer name is rejected with the list of reducers.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
    #[reducer(apend)]
    notes: Vec<String>,
}

fn main() {}
