//! A state declared in a function body next to an enum named like its update type.

use stategraph::prelude::*;

fn main() {
    #[derive(GraphState, Clone, Debug, Default)]
    struct r#Job {
        steps: u32,
    }

    #[derive(Debug)]
    enum JobUpdate {
        Started,
    }

    let _ = JobUpdate::Started;
}
