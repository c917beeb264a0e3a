//! `&[String]` as the input.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    #[reducer(append)]
    notes: Vec<String>,
}

#[node]
fn note(items: &[String]) -> ResearchUpdate {
    Research::update().notes(items.to_vec())
}

fn main() {}
