//! `#[stategraph_agent::tool]` (full path) on a trait's provided function, in a module.

mod tools {
    pub trait Lookup {
        /// Look a word up.
        #[stategraph_agent::tool(name = "lookup")]
        fn r#type(word: String) -> String {
            word
        }
    }
}

fn main() {}
