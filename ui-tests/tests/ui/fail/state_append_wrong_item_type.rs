//! Items appended to a `Vec<String>` channel must be strings.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
    #[reducer(append)]
    notes: Vec<String>,
}

fn main() {
    let _ = Research::update().notes([1, 2]);
}
