//! A `pub` state in a nested module without `Clone`: one error, at the state's name.

mod states {
    use stategraph::prelude::*;

    #[derive(GraphState, Debug, Default)]
    pub struct Research {
        pub topic: String,
        #[reducer(append)]
        pub notes: Vec<String>,
    }
}

fn main() {}
