//! Node cache entries kept by the PostgreSQL saver: shared by every saver (worker) on
//! the database, removed with `delete_thread`, and a corrupt row is a clear error.
//!
//! Needs a server: set `STATEGRAPH_POSTGRES_URL` (see `stategraph_tests::servers`).

use stategraph::cache::{CacheKey, NodeCache};
use stategraph::checkpoint::{CheckpointError, CheckpointSaver};
use stategraph::prelude::*;
use stategraph_postgres::{PostgresOptions, PostgresSaver};
use stategraph_tests::cached_page::{Page, download, downloads, graph};
use stategraph_tests::servers;

/// This file's page: the download counter is per url, and other tests run at once.
const PAGE: &str = "postgres.example";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entries_are_shared_by_workers_and_go_with_delete_thread() {
    let Some(url) = servers::postgres_url(module_path!()) else {
        return;
    };
    let schema = servers::fresh_schema("cache");
    let connect = || PostgresSaver::connect_with(&url, PostgresOptions::new().schema(&schema));
    let cfg = RunConfig::new().thread("page");
    let before = downloads(PAGE);

    let first = graph(connect().await.unwrap());
    first.invoke(Page::update().url(PAGE), &cfg).await.unwrap();
    assert_eq!(downloads(PAGE) - before, 1);

    // Another worker on the same database is served from the entry.
    let saver = connect().await.unwrap();
    let second = graph(saver.clone());
    let out = second.invoke(Page::update().url(PAGE), &cfg).await.unwrap();
    assert_eq!(downloads(PAGE) - before, 1);
    assert_eq!(out.values.body, format!("<html>{PAGE}</html>"));
    assert_eq!(out.values.fetches, 2);
    assert!(!second.staleness(&cfg, download).await.unwrap().stale);

    saver.delete_thread("page").await.unwrap();
    let key = CacheKey {
        thread_id: "page".into(),
        node: "download".into(),
        input: String::new(),
    };
    assert_eq!(NodeCache::get(&saver, &key).await.unwrap(), None);
    second.invoke(Page::update().url(PAGE), &cfg).await.unwrap();
    assert_eq!(downloads(PAGE) - before, 2);

    // A corrupt entry is a clear error naming the node and thread; clearing the
    // node's cache recovers.
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .batch_execute(&format!(
            "UPDATE \"{schema}\".stategraph_cache SET entry = '{{not json'"
        ))
        .await
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
    drop((first, second, saver));
    client
        .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
        .await
        .unwrap();
}
