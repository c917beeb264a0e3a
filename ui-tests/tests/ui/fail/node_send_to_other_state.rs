//! A `Send` to a node of another state.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    #[reducer(append)]
    notes: Vec<String>,
}

#[derive(GraphState, Clone, Debug, Default)]
struct Other {
    count: u32,
}

#[node]
async fn worker(item: &u32) -> OtherUpdate {
    Other::update().count(*item)
}

fn router(_: &Research) -> Route<Research> {
    Route::sends([stategraph::Send::new(worker, 7u32)])
}

fn main() {
    let _ = router;
}
