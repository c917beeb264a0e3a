//! The derive only takes a struct with named fields.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
enum Phase {
    #[default]
    Plan,
    Search,
}

fn main() {}
