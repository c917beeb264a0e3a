//! `&str` as the input: a payload must be a sized, owned type.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    #[reducer(append)]
    notes: Vec<String>,
}

#[node]
fn note(item: &str) -> ResearchUpdate {
    Research::update().notes([item.to_string()])
}

fn main() {}
