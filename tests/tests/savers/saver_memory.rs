//! The in-memory saver passes the saver conformance suite.

use stategraph::checkpoint::InMemorySaver;
use stategraph_tests::conformance;

#[tokio::test]
async fn in_memory_saver_passes_the_conformance_suite() {
    let saver = InMemorySaver::new();
    conformance::run_all(&saver).await;
}
