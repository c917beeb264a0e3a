//! The main demo as a binary target, so integration tests can start it as a real
//! process (`CARGO_BIN_EXE_stategraph-demo`), kill it and start it again. Identical
//! to `cargo run -p stategraph-examples --example research_pipeline`.

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    stategraph_examples::research::main().await
}
