//! Channels are named by their fields, so a tuple struct is rejected.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research(String, Vec<String>);

fn main() {}
