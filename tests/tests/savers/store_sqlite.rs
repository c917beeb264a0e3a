//! The SQLite store: passes the store conformance suite; shares a file with a saver
//! (each keeps its own tables and versions); keeps its items across reopening;
//! refuses newer tables without touching the file; two processes writing at once
//! lose nothing and tear nothing.

use std::sync::Arc;

use serde_json::json;
use stategraph::prelude::*;
use stategraph::store::{Store, StoreError};
use stategraph_sqlite::{STORE_TABLE_VERSION, SqliteError, SqliteSaver, SqliteStore};
use stategraph_tests::store_conformance::StoreSetup;
use stategraph_tests::workloads::Store as Target;
use stategraph_tests::{store_reference, store_writers};

const WORKER: &str = env!("CARGO_BIN_EXE_store_worker");

fn sqlite_error(err: &StoreError) -> &SqliteError {
    match err {
        StoreError::Backend {
            backend: "sqlite",
            source,
            ..
        } => source
            .downcast_ref::<SqliteError>()
            .unwrap_or_else(|| panic!("not a SqliteError: {source:?}")),
        other => panic!("not a backend error: {other:?}"),
    }
}

#[tokio::test]
async fn a_store_and_a_saver_share_one_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.db");
    let saver = SqliteSaver::open(&path).unwrap();
    let store = SqliteStore::open(&path).unwrap();
    store
        .put(&["users", "u1"], "prefs", json!({"theme": "dark"}))
        .await
        .unwrap();

    #[derive(GraphState, Clone, Debug, Default)]
    struct Count {
        #[reducer(add)]
        n: u32,
    }
    #[node]
    fn bump(_: &Count) -> CountUpdate {
        Count::update().n(1)
    }
    let graph = StateGraph::<Count>::new()
        .add_node(bump)
        .add_edge(START, bump)
        .compile_with(CompileOptions::new().checkpointer(saver))
        .unwrap();
    let out = graph
        .invoke(Count::update(), &RunConfig::new().thread("t"))
        .await
        .unwrap();
    assert_eq!(out.values.n, 1);

    // Both sets of tables, each with its own version row.
    let conn = rusqlite::Connection::open(&path).unwrap();
    let versions: Vec<(String, String)> = conn
        .prepare("SELECT key, value FROM stategraph_meta ORDER BY key")
        .unwrap()
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        versions,
        [
            (
                "schema_version".to_string(),
                stategraph_sqlite::TABLE_VERSION.to_string()
            ),
            (
                "store_schema_version".to_string(),
                STORE_TABLE_VERSION.to_string()
            ),
        ]
    );
    drop(conn);

    // Reopened (as another process would), the item is still there.
    drop(store);
    let again = SqliteStore::open(&path).unwrap();
    let item = again.get(&["users", "u1"], "prefs").await.unwrap().unwrap();
    assert_eq!(item.value, json!({"theme": "dark"}));
    assert_eq!(
        SqliteSaver::open(&path).unwrap().path(),
        Some(path.as_path())
    );
}

#[tokio::test]
async fn newer_store_tables_are_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("newer.db");
    let store = SqliteStore::open(&path).unwrap();
    store.put(&["a"], "k", json!({"v": 1})).await.unwrap();
    drop(store);
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(
        "UPDATE stategraph_meta SET value = ?1 WHERE key = 'store_schema_version'",
        [(STORE_TABLE_VERSION + 1).to_string()],
    )
    .unwrap();
    drop(conn);
    let before = std::fs::read(&path).unwrap();

    let err = SqliteStore::open(&path).unwrap_err();
    assert!(
        matches!(
            sqlite_error(&err),
            SqliteError::NewerStoreTables { found, supported, .. }
                if *found == STORE_TABLE_VERSION + 1 && *supported == STORE_TABLE_VERSION
        ),
        "{err:?}"
    );
    let message = sqlite_error(&err).to_string();
    assert!(message.contains("store tables"), "{message}");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "the file was not touched"
    );
    // The saver, whose tables are not there yet, still opens the file.
    SqliteSaver::open(&path).unwrap();
}

#[tokio::test]
async fn a_missing_directory_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let err = SqliteStore::open(dir.path().join("no/such/dir/x.db")).unwrap_err();
    assert!(
        matches!(sqlite_error(&err), SqliteError::MissingDirectory { .. }),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_corrupt_value_names_its_item() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("corrupt.db");
    let store = SqliteStore::open(&path).unwrap();
    store
        .put(&["docs"], "d1", json!({"ok": true}))
        .await
        .unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute("UPDATE stategraph_store_items SET value = '{not json'", [])
        .unwrap();
    let err = store.get(&["docs"], "d1").await.unwrap_err();
    assert!(
        matches!(sqlite_error(&err), SqliteError::CorruptItem { key, namespace, .. }
            if key == "d1" && namespace == "docs"),
        "{err:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_writing_at_once_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("writers.db");
    // The tables exist before the workers start, as when an application opened the
    // file first; the workers racing to create them is `concurrency_sqlite_open`'s
    // subject for the saver, and the same code path here.
    drop(SqliteStore::open(&path).unwrap());
    let target = Target::Sqlite(path.clone());
    let rounds = 40;
    tokio::task::spawn_blocking(move || store_writers::run_two_writers(WORKER, &target, rounds))
        .await
        .unwrap();
    let store = SqliteStore::open(&path).unwrap();
    store_writers::check(&store, &["a", "b"], rounds).await;
}

/// A store in a file of its own, removed with it.
struct OnDisk {
    store: SqliteStore,
    _dir: tempfile::TempDir,
}

impl Store for OnDisk {
    fn batch<'a>(
        &'a self,
        ops: Vec<stategraph::store::StoreOp>,
    ) -> stategraph::BoxFuture<'a, Result<Vec<stategraph::store::StoreOutput>, StoreError>> {
        self.store.batch(ops)
    }

    fn sweep(&self) -> stategraph::BoxFuture<'_, Result<usize, StoreError>> {
        self.store.sweep()
    }
}

fn on_disk(setup: StoreSetup) -> stategraph::BoxFuture<'static, Arc<dyn Store>> {
    Box::pin(async move {
        let dir = tempfile::tempdir().unwrap();
        let mut store = SqliteStore::open(dir.path().join("store.db"))
            .unwrap()
            .with_ttl(setup.ttl);
        if let Some(index) = setup.index {
            store = store.with_index(index);
        }
        Arc::new(OnDisk { store, _dir: dir }) as Arc<dyn Store>
    })
}

mod conformance {
    stategraph_tests::store_conformance_tests!(super::on_disk);
}

/// The SQLite store reads fewer rows than a full scan when it can (newest first with
/// an early stop, scores before values); every page it returns still equals the
/// in-memory reference store's.
#[tokio::test]
async fn shortened_searches_return_what_the_reference_store_returns() {
    use stategraph_tests::store_conformance::test_index;
    let dir = tempfile::tempdir().unwrap();
    let sqlite = SqliteStore::open(dir.path().join("ref.db"))
        .unwrap()
        .with_index(test_index());
    store_reference::pages_match_reference(&sqlite).await;
}
