//! A user type named like the generated `<State>Update`.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct S {
    topic: String,
}

struct SUpdate;

fn main() {}
