//! The main demo: a research and review pipeline with a `Send` fan-out, streaming
//! progress, a SQLite checkpoint and a human approval step. Kill it at any point and
//! run it again: it continues the same thread.
//!
//! ```text
//! cargo run -p stategraph-examples --example research_pipeline            # asks before publishing
//! cargo run -p stategraph-examples --example research_pipeline -- --yes   # answers by itself
//! cargo run -p stategraph-examples --example research_pipeline -- --fresh # a new thread
//! ```
//!
//! The pipeline itself is `stategraph_examples::research` (examples/src/research.rs).

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    stategraph_examples::research::main().await
}
