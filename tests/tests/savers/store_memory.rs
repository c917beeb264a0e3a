//! The in-memory store passes the store conformance suite (one test per check), and
//! its background sweeper stops when the last handle to the store is dropped.

use std::sync::Arc;
use std::time::Duration;

use stategraph::BoxFuture;
use stategraph::store::{InMemoryStore, Store, TtlConfig};
use stategraph_tests::store_conformance::StoreSetup;

fn make(setup: StoreSetup) -> BoxFuture<'static, Arc<dyn Store>> {
    Box::pin(async move {
        let mut store = InMemoryStore::new().with_ttl(setup.ttl);
        if let Some(index) = setup.index {
            store = store.with_index(index);
        }
        Arc::new(store) as Arc<dyn Store>
    })
}

stategraph_tests::store_conformance_tests!(make);

#[tokio::test]
async fn run_all_passes_too() {
    stategraph_tests::store_conformance::run_all(&make).await;
}

#[tokio::test]
async fn the_sweeper_stops_when_the_store_is_dropped() {
    let metrics = tokio::runtime::Handle::current().metrics();
    let before = metrics.num_alive_tasks();
    let store =
        InMemoryStore::new().with_ttl(TtlConfig::new().sweep_interval(Duration::from_millis(5)));
    let copy = store.clone();
    assert_eq!(store.sweep().await.unwrap(), 0);
    assert_eq!(metrics.num_alive_tasks(), before + 1, "one sweeper started");
    assert_eq!(copy.sweep().await.unwrap(), 0);
    assert_eq!(metrics.num_alive_tasks(), before + 1, "shared by clones");
    drop(store);
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(
        metrics.num_alive_tasks(),
        before + 1,
        "a clone still holds it"
    );
    drop(copy);
    let mut stopped = false;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        if metrics.num_alive_tasks() == before {
            stopped = true;
            break;
        }
    }
    assert!(stopped, "the sweeper outlived the store");
}
