//! A unit struct has no channels.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research;

fn main() {}
