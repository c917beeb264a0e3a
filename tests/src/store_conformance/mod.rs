//! The store conformance suite: every [`Store`] backend must pass it.
//!
//! A backend provides a [`MakeStore`]: given a [`StoreSetup`] (an index or none, a TTL
//! config), it returns a fresh, empty store built with them. Each check builds the
//! stores it needs. Run them all with [`run_all`], or one `#[tokio::test]` per check
//! with [`store_conformance_tests!`](crate::store_conformance_tests):
//!
//! ```ignore
//! fn make(setup: StoreSetup) -> BoxFuture<'static, Arc<dyn Store>> {
//!     Box::pin(async move {
//!         let mut store = InMemoryStore::new().with_ttl(setup.ttl);
//!         if let Some(index) = setup.index {
//!             store = store.with_index(index);
//!         }
//!         Arc::new(store) as Arc<dyn Store>
//!     })
//! }
//! stategraph_tests::store_conformance_tests!(make);
//! ```
//!
//! TTL checks sleep at most a few hundred milliseconds, and never assert that an item
//! is still alive on a short TTL (only that it is gone after a wide margin, or that
//! reads moved `expires_at`).

mod basics;
mod embedder;
mod semantic;
mod ttl;

use std::sync::Arc;

use stategraph::BoxFuture;
use stategraph::store::{IndexConfig, Store, TtlConfig};

pub use basics::{
    bad_filter, batch_atomicity, batch_outputs, delete, filters, invalid_input, list_namespaces,
    put_get_overwrite, search_order_and_pages, typed_values,
};
pub use embedder::{HashEmbedder, WRONG_DIMS_MARKER, reference_cosine};
pub use semantic::{index_fields, no_index, semantic_ranking, wrong_dimension};
pub use ttl::{
    background_sweeper, default_ttl_without_refresh, sweep, ttl_expiry, ttl_refresh_on_read,
};

/// The dimensions of the test index.
pub const TEST_DIMS: usize = 64;

/// The test index: [`HashEmbedder`] with [`TEST_DIMS`], embedding the `text` field.
pub fn test_index() -> IndexConfig {
    IndexConfig::new(TEST_DIMS, HashEmbedder::new(TEST_DIMS)).fields(["text"])
}

/// What a check asks its store to be built with.
#[derive(Clone, Debug)]
pub struct StoreSetup {
    /// The index (`None`: a store without semantic search).
    pub index: Option<IndexConfig>,
    /// The TTL config.
    pub ttl: TtlConfig,
}

impl StoreSetup {
    /// The standard setup: [`test_index`], and TTL with refresh on read, no default
    /// TTL and no sweeper.
    pub fn standard() -> Self {
        Self {
            index: Some(test_index()),
            ttl: TtlConfig::new(),
        }
    }
}

/// Builds a fresh, empty store with a setup.
pub type MakeStore = dyn Fn(StoreSetup) -> BoxFuture<'static, Arc<dyn Store>> + Send + Sync;

/// The names of every check, in the order [`run_all`] runs them.
pub const CHECKS: &[&str] = &[
    "put_get_overwrite",
    "delete",
    "list_namespaces",
    "filters",
    "bad_filter",
    "search_order_and_pages",
    "typed_values",
    "batch_outputs",
    "batch_atomicity",
    "invalid_input",
    "ttl_expiry",
    "ttl_refresh_on_read",
    "default_ttl_without_refresh",
    "sweep",
    "background_sweeper",
    "semantic_ranking",
    "index_fields",
    "wrong_dimension",
    "no_index",
];

/// Runs every check, each on fresh stores from `make`.
pub async fn run_all(make: &MakeStore) {
    put_get_overwrite(make).await;
    delete(make).await;
    list_namespaces(make).await;
    filters(make).await;
    bad_filter(make).await;
    search_order_and_pages(make).await;
    typed_values(make).await;
    batch_outputs(make).await;
    batch_atomicity(make).await;
    invalid_input(make).await;
    ttl_expiry(make).await;
    ttl_refresh_on_read(make).await;
    default_ttl_without_refresh(make).await;
    sweep(make).await;
    background_sweeper(make).await;
    semantic_ranking(make).await;
    index_fields(make).await;
    wrong_dimension(make).await;
    no_index(make).await;
}

/// One `#[tokio::test]` per conformance check, each with fresh stores from `$make`
/// (a `fn(StoreSetup) -> BoxFuture<'static, Arc<dyn Store>>` or such a closure).
#[macro_export]
macro_rules! store_conformance_tests {
    ($make:expr) => {
        $crate::store_conformance_tests!(@each $make;
            put_get_overwrite, delete, list_namespaces, filters, bad_filter,
            search_order_and_pages, typed_values, batch_outputs, batch_atomicity,
            invalid_input, ttl_expiry, ttl_refresh_on_read, default_ttl_without_refresh,
            sweep, background_sweeper, semantic_ranking, index_fields, wrong_dimension,
            no_index);
    };
    (@each $make:expr; $($check:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $check() {
                $crate::store_conformance::$check(&$make).await;
            }
        )*
    };
}

/// `["a", "b"]` as an owned namespace.
pub(crate) fn ns(labels: &[&str]) -> Vec<String> {
    labels.iter().map(|l| (*l).to_owned()).collect()
}

/// The keys of search hits, in order.
pub(crate) fn keys(hits: &[stategraph::store::SearchItem]) -> Vec<String> {
    hits.iter().map(|h| h.item.key.clone()).collect()
}
