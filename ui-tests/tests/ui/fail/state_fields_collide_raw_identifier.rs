//! `r#type` and `TYPE` both want the key `TYPE`.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
#[allow(non_snake_case)]
pub(crate) struct Item {
    r#type: String,
    TYPE: String,
}

fn main() {}
