//! `update =` given twice in one `#[reducer]`, through a full path.

use stategraph::prelude::*;

mod folds {
    pub fn push(current: &mut Vec<String>, update: String) {
        current.push(update);
    }
}

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    #[reducer(with = folds::push, update = String, update = std::string::String)]
    notes: Vec<String>,
}

fn main() {}
