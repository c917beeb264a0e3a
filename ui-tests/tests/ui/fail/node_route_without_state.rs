//! A bare `Route` in a router's signature.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
}

fn router(_: &Research) -> Route {
    Route::end()
}

fn main() {
    let _ = router;
}
