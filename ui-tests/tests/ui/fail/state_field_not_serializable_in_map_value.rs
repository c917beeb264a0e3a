//! A non-serde type as the value of a `merge` map, the map written as a full path.

use stategraph::prelude::*;

#[derive(Clone, Debug, Default, serde::Serialize)]
struct Cache {
    hits: u32,
}

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    #[reducer(merge)]
    caches: std::collections::BTreeMap<String, Cache>,
}

fn main() {}
