//! `append` on an alias of a `Vec` whose items are not serde: the reducer fits, the
//! checkpoint does not; one error, at the field's type.

use stategraph::prelude::*;

#[derive(Clone, Debug, Default)]
struct Cache {
    hits: u32,
}

type Caches = Vec<Cache>;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    #[reducer(append)]
    caches: Caches,
}

fn main() {}
