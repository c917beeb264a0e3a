//! A state with no channels, written as an empty braced struct.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Empty {}

fn main() {}
