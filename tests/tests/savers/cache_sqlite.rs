//! Node cache entries kept by the SQLite saver: they survive a restart, go with
//! `delete_thread`, a corrupt row is a clear error, and an older database gains the
//! cache table without losing its threads.

use std::path::{Path, PathBuf};

use stategraph::cache::{CacheKey, NodeCache};
use stategraph::checkpoint::{CheckpointError, CheckpointSaver};
use stategraph::prelude::*;
use stategraph_sqlite::{SqliteSaver, TABLE_VERSION};
use stategraph_tests::cached_page::{Page, download, downloads, graph};

/// This file's page: the download counter is per url, and other tests run at once.
const PAGE: &str = "sqlite.example";

fn db(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("cache.db")
}

fn raw(path: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(path).unwrap()
}

// `download` counts calls per url, and only this test asks for `PAGE`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entries_survive_a_restart_and_go_with_delete_thread() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let cfg = RunConfig::new().thread("page");
    let before = downloads(PAGE);

    let first = graph(SqliteSaver::open(&path).unwrap());
    first.invoke(Page::update().url(PAGE), &cfg).await.unwrap();
    assert_eq!(downloads(PAGE) - before, 1);
    drop(first);

    // A new process opening the file: `download` is served from the saved entry.
    let saver = SqliteSaver::open(&path).unwrap();
    let second = graph(saver.clone());
    let out = second.invoke(Page::update().url(PAGE), &cfg).await.unwrap();
    assert_eq!(downloads(PAGE) - before, 1);
    assert_eq!(out.values.body, format!("<html>{PAGE}</html>"));
    assert_eq!(out.values.fetches, 2, "the reused write applies again");
    assert!(!second.staleness(&cfg, download).await.unwrap().stale);

    // Deleting the thread deletes its cache entries.
    saver.delete_thread("page").await.unwrap();
    let key = CacheKey {
        thread_id: "page".into(),
        node: "download".into(),
        input: String::new(),
    };
    assert_eq!(NodeCache::get(&saver, &key).await.unwrap(), None);
    second.invoke(Page::update().url(PAGE), &cfg).await.unwrap();
    assert_eq!(downloads(PAGE) - before, 2);

    // A corrupt entry is a clear error naming the node and thread; nothing else in
    // the file is touched, and clearing the node's cache recovers.
    raw(&path)
        .execute("UPDATE stategraph_cache SET entry = '{not json'", [])
        .unwrap();
    let err = second
        .invoke(Page::update().url(PAGE), &cfg)
        .await
        .unwrap_err();
    let message = err.to_string();
    assert!(
        matches!(err, RunError::Checkpoint(CheckpointError::Corrupt { .. })),
        "{err:?}"
    );
    assert!(
        message.contains("node `download`") && message.contains("thread `page`"),
        "{message}"
    );
    // The failed run saved nothing: the thread (started afresh after the delete)
    // still has its one fetch.
    assert_eq!(
        second
            .get_state(&cfg)
            .await
            .unwrap()
            .unwrap()
            .values
            .fetches,
        1
    );
    assert_eq!(second.clear_node_cache(&cfg, download).await.unwrap(), 1);
    second.invoke(Page::update().url(PAGE), &cfg).await.unwrap();
    assert_eq!(downloads(PAGE) - before, 3);
    // Clearing the thread removes its one entry, and only on that thread.
    assert_eq!(
        second
            .clear_cache(&RunConfig::new().thread("other"))
            .await
            .unwrap(),
        0
    );
    assert_eq!(second.clear_cache(&cfg).await.unwrap(), 1);
    assert_eq!(second.clear_cache(&cfg).await.unwrap(), 0);
}

#[tokio::test]
async fn a_database_from_before_the_cache_table_gains_it_and_keeps_its_threads() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let saver = SqliteSaver::open(&path).unwrap();
    let g = {
        let mut b = StateGraph::<Page>::new();
        let noop = b.add_node_fn("noop", |_p: &Page| Page::update());
        b.add_edge(START, &noop);
        b.compile_with(CompileOptions::new().checkpointer(saver.clone()))
            .unwrap()
    };
    let cfg = RunConfig::new().thread("old");
    g.invoke(Page::update().url("kept"), &cfg).await.unwrap();
    drop((g, saver));
    // Make the file look like one written before the cache table (and the checkpoint
    // order column) existed.
    raw(&path)
        .execute_batch(
            "DROP TABLE stategraph_cache;
             DROP INDEX stategraph_checkpoints_seq;
             ALTER TABLE stategraph_checkpoints DROP COLUMN seq;
             UPDATE stategraph_meta SET value = '1' WHERE key = 'schema_version';",
        )
        .unwrap();

    let saver = SqliteSaver::open(&path).unwrap();
    let version: String = raw(&path)
        .query_row(
            "SELECT value FROM stategraph_meta WHERE key = 'schema_version'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(version, TABLE_VERSION.to_string());
    let tuple = saver
        .get_tuple(&stategraph::checkpoint::CheckpointConfig::thread("old"))
        .await
        .unwrap()
        .unwrap();
    assert!(tuple.metadata.step >= 0);
    let key = CacheKey {
        thread_id: "old".into(),
        node: "noop".into(),
        input: String::new(),
    };
    assert_eq!(NodeCache::get(&saver, &key).await.unwrap(), None);
}
