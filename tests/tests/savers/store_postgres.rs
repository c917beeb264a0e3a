//! The PostgreSQL store: passes the store conformance suite (each check in a schema
//! of its own); shares a schema with a saver (each keeps its own tables and
//! versions); refuses newer tables without touching them; two processes writing at
//! once lose nothing and tear nothing.
//!
//! Needs a server: set `STATEGRAPH_POSTGRES_URL` (see `stategraph_tests::servers`).

use std::sync::Arc;

use serde_json::json;
use stategraph::store::{Store, StoreError};
use stategraph_postgres::{
    PostgresError, PostgresOptions, PostgresSaver, PostgresStore, STORE_TABLE_VERSION,
};
use stategraph_tests::servers;
use stategraph_tests::store_conformance::StoreSetup;
use stategraph_tests::workloads::Store as Target;
use stategraph_tests::{store_reference, store_writers};

const WORKER: &str = env!("CARGO_BIN_EXE_store_worker");

macro_rules! server {
    () => {
        match servers::postgres_url(module_path!()) {
            Some(url) => url,
            None => return,
        }
    };
}

/// A schema no other test uses; [`Schema::drop_all`] removes it at the end of a
/// test (a failed test leaves it behind, to look at).
struct Schema {
    url: String,
    name: String,
}

impl Schema {
    fn fresh(url: &str) -> Self {
        Self {
            url: url.to_string(),
            name: servers::fresh_schema("store"),
        }
    }

    fn options(&self) -> PostgresOptions {
        PostgresOptions::new().schema(&self.name)
    }

    async fn drop_all(self) {
        raw(&self.url)
            .await
            .batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name))
            .await
            .unwrap();
    }

    async fn store(&self) -> PostgresStore {
        PostgresStore::connect_with(&self.url, self.options())
            .await
            .unwrap()
    }
}

/// A plain client, as another program would connect.
async fn raw(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
}

fn pg_error(err: &StoreError) -> &PostgresError {
    match err {
        StoreError::Backend {
            backend: "postgres",
            source,
            ..
        } => source
            .downcast_ref::<PostgresError>()
            .unwrap_or_else(|| panic!("not a PostgresError: {source:?}")),
        other => panic!("not a backend error: {other:?}"),
    }
}

#[tokio::test]
async fn a_store_and_a_saver_share_one_schema() {
    let url = server!();
    let schema = Schema::fresh(&url);
    let store = schema.store().await;
    let _saver = PostgresSaver::connect_with(&url, schema.options())
        .await
        .unwrap();
    store
        .put(&["users", "u1"], "prefs", json!({"theme": "dark"}))
        .await
        .unwrap();
    let rows = raw(&url)
        .await
        .query(
            &format!(
                "SELECT key, value FROM {}.stategraph_meta ORDER BY key",
                schema.name
            ),
            &[],
        )
        .await
        .unwrap();
    let versions: Vec<(String, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(
        versions,
        [
            (
                "schema_version".to_string(),
                stategraph_postgres::TABLE_VERSION.to_string()
            ),
            (
                "store_schema_version".to_string(),
                STORE_TABLE_VERSION.to_string()
            ),
        ]
    );
    // Another connection (as another process) sees the item.
    let again = schema.store().await;
    let item = again.get(&["users", "u1"], "prefs").await.unwrap().unwrap();
    assert_eq!(item.value, json!({"theme": "dark"}));
    drop((store, again));
    schema.drop_all().await;
}

#[tokio::test]
async fn newer_store_tables_are_refused_untouched() {
    let url = server!();
    let schema = Schema::fresh(&url);
    schema
        .store()
        .await
        .put(&["a"], "k", json!({"v": 1}))
        .await
        .unwrap();
    let client = raw(&url).await;
    client
        .execute(
            &format!(
                "UPDATE {}.stategraph_meta SET value = $1 WHERE key = 'store_schema_version'",
                schema.name
            ),
            &[&(STORE_TABLE_VERSION + 1).to_string()],
        )
        .await
        .unwrap();
    let err = PostgresStore::connect_with(&url, schema.options())
        .await
        .unwrap_err();
    assert!(
        matches!(pg_error(&err), PostgresError::NewerStoreTables { found, .. }
            if *found == STORE_TABLE_VERSION + 1),
        "{err:?}"
    );
    let count: i64 = client
        .query_one(
            &format!(
                "SELECT count(*) FROM {}.stategraph_store_items",
                schema.name
            ),
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(count, 1, "the item is still there");
    schema.drop_all().await;
}

#[tokio::test]
async fn a_corrupt_value_names_its_item() {
    let url = server!();
    let schema = Schema::fresh(&url);
    let store = schema.store().await;
    store
        .put(&["docs"], "d1", json!({"ok": true}))
        .await
        .unwrap();
    raw(&url)
        .await
        .execute(
            &format!(
                "UPDATE {}.stategraph_store_items SET value = '{{not json'",
                schema.name
            ),
            &[],
        )
        .await
        .unwrap();
    let err = store.get(&["docs"], "d1").await.unwrap_err();
    assert!(
        matches!(pg_error(&err), PostgresError::CorruptItem { key, namespace, .. }
            if key == "d1" && namespace == "docs"),
        "{err:?}"
    );
    drop(store);
    schema.drop_all().await;
}

#[tokio::test]
async fn a_wrong_password_is_a_connect_error() {
    let url = server!();
    let Some((scheme, rest)) = url.split_once("://") else {
        return;
    };
    let Some((_, host)) = rest.rsplit_once('@') else {
        return;
    };
    let bad = format!("{scheme}://nobody:wrong@{host}");
    let err = PostgresStore::connect(&bad).await.unwrap_err();
    assert!(
        matches!(pg_error(&err), PostgresError::Connect { .. }),
        "{err:?}"
    );
    assert!(
        !format!("{err:?}").contains("wrong"),
        "no password in errors"
    );
}

/// Every search page equals the in-memory reference store's (namespaces in the `C`
/// collation sort by text, which the ranking must not follow).
#[tokio::test]
async fn searches_return_what_the_reference_store_returns() {
    let url = server!();
    let schema = Schema::fresh(&url);
    let store = schema
        .store()
        .await
        .with_index(stategraph_tests::store_conformance::test_index());
    store_reference::pages_match_reference(&store).await;
    drop(store);
    schema.drop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_writing_at_once_lose_nothing() {
    let url = server!();
    let schema = Schema::fresh(&url);
    let store = schema.store().await;
    let target = Target::Postgres {
        url: url.clone(),
        schema: schema.name.clone(),
    };
    let rounds = 40;
    tokio::task::spawn_blocking(move || store_writers::run_two_writers(WORKER, &target, rounds))
        .await
        .unwrap();
    store_writers::check(&store, &["a", "b"], rounds).await;
    drop(store);
    schema.drop_all().await;
}

/// A store in a schema of its own, dropped with it.
struct InSchema {
    store: Option<PostgresStore>,
    url: String,
    schema: String,
}

impl Store for InSchema {
    fn batch<'a>(
        &'a self,
        ops: Vec<stategraph::store::StoreOp>,
    ) -> stategraph::BoxFuture<'a, Result<Vec<stategraph::store::StoreOutput>, StoreError>> {
        match &self.store {
            Some(store) => store.batch(ops),
            None => unreachable!("the store is only taken when dropped"),
        }
    }

    fn sweep(&self) -> stategraph::BoxFuture<'_, Result<usize, StoreError>> {
        match &self.store {
            Some(store) => store.sweep(),
            None => unreachable!("the store is only taken when dropped"),
        }
    }
}

impl Drop for InSchema {
    fn drop(&mut self) {
        // The pool's connections are idle (no batch is under way), so they hold no
        // locks the schema's removal would wait for.
        drop(self.store.take());
        let (url, schema) = (self.url.clone(), self.schema.clone());
        let _ = std::thread::spawn(move || servers::drop_schema(&url, &schema)).join();
    }
}

fn in_schema(setup: StoreSetup) -> stategraph::BoxFuture<'static, Arc<dyn Store>> {
    Box::pin(async move {
        let url = servers::postgres_url("store_postgres conformance")
            .expect("checked by the test before it builds a store");
        let schema = servers::fresh_schema("store");
        let mut store =
            PostgresStore::connect_with(&url, PostgresOptions::new().schema(&schema).pool_size(2))
                .await
                .unwrap()
                .with_ttl(setup.ttl);
        if let Some(index) = setup.index {
            store = store.with_index(index);
        }
        Arc::new(InSchema {
            store: Some(store),
            url,
            schema,
        }) as Arc<dyn Store>
    })
}

/// Runs one conformance check, or skips it (visibly) without a server.
macro_rules! conformance {
    ($($check:ident),* $(,)?) => {
        mod conformance {
            $(
                // Two workers: a store's background sweeper may be inside a
                // transaction when the test's store is dropped, and dropping the
                // schema then blocks this thread until the sweeper commits — which
                // it does on the other worker (on one thread the two would wait on
                // each other for ever).
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $check() {
                    if stategraph_tests::servers::postgres_url(module_path!()).is_none() {
                        return;
                    }
                    stategraph_tests::store_conformance::$check(&super::in_schema).await;
                }
            )*
        }
    };
}

conformance!(
    put_get_overwrite,
    delete,
    list_namespaces,
    filters,
    bad_filter,
    search_order_and_pages,
    typed_values,
    batch_outputs,
    batch_atomicity,
    invalid_input,
    ttl_expiry,
    ttl_refresh_on_read,
    default_ttl_without_refresh,
    sweep,
    background_sweeper,
    semantic_ranking,
    index_fields,
    wrong_dimension,
    no_index,
);

#[test]
fn every_conformance_check_runs_here() {
    let source = include_str!("store_postgres.rs");
    for check in stategraph_tests::store_conformance::CHECKS {
        assert!(
            source.contains(&format!("    {check},\n")),
            "conformance check `{check}` is not in this file's list"
        );
    }
}
