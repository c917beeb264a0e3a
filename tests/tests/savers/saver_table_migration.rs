//! Tables of version 2 (before checkpoints carried their order) are upgraded when a
//! saver opens them: existing checkpoints are numbered in id order, the order they
//! had, and later ones follow them whatever their ids.

use std::time::{Duration, SystemTime};

use stategraph::checkpoint::{
    CheckpointConfig, CheckpointMetadata, CheckpointSaver, CheckpointSource, ListOptions,
    new_checkpoint_id_at,
};
use stategraph_postgres::{PostgresOptions, PostgresSaver};
use stategraph_sqlite::{SqliteSaver, TABLE_VERSION};
use stategraph_tests::{conformance, servers};

/// Turns the current tables back into version 2.
const DOWNGRADE: &str = "DROP INDEX stategraph_checkpoints_seq;
    ALTER TABLE stategraph_checkpoints DROP COLUMN seq;
    UPDATE stategraph_meta SET value = '2' WHERE key = 'schema_version';";

/// Puts three chained checkpoints on `thread`; returns their ids.
async fn three(saver: &dyn CheckpointSaver, thread: &str) -> Vec<String> {
    let mut config = CheckpointConfig::thread(thread);
    let mut ids = Vec::new();
    for version in 1..=3 {
        config = saver
            .put(
                &config,
                conformance::checkpoint(version),
                CheckpointMetadata::new(CheckpointSource::Loop, version as i64),
            )
            .await
            .unwrap();
        ids.push(config.checkpoint_id.clone().unwrap());
    }
    ids
}

/// On upgraded tables: the old checkpoints keep their order, and one put after them
/// with an id from a slow clock is the latest.
async fn check_upgraded(saver: &dyn CheckpointSaver, thread: &str, mut ids: Vec<String>) {
    let config = CheckpointConfig::thread(thread);
    let latest = saver.get_tuple(&config).await.unwrap().unwrap();
    assert_eq!(latest.config.checkpoint_id.as_ref(), ids.last());

    let mut slow = conformance::checkpoint(4);
    slow.id = new_checkpoint_id_at(SystemTime::now() - Duration::from_secs(3600));
    ids.push(slow.id.clone());
    saver
        .put(
            &latest.config,
            slow,
            CheckpointMetadata::new(CheckpointSource::Loop, 4),
        )
        .await
        .unwrap();
    let listed: Vec<String> = saver
        .list(&config, &ListOptions::new())
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.config.checkpoint_id.unwrap())
        .collect();
    ids.reverse();
    assert_eq!(listed, ids);
}

#[tokio::test]
async fn sqlite_tables_of_version_2_gain_the_thread_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    let ids = three(&SqliteSaver::open(&path).unwrap(), "old").await;
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch(DOWNGRADE)
        .unwrap();

    let saver = SqliteSaver::open(&path).unwrap();
    let version: String = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row(
            "SELECT value FROM stategraph_meta WHERE key = 'schema_version'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(version, TABLE_VERSION.to_string());
    check_upgraded(&saver, "old", ids).await;
}

#[tokio::test]
async fn postgres_tables_of_version_2_gain_the_thread_order() {
    let Some(url) = servers::postgres_url(module_path!()) else {
        return;
    };
    let schema = servers::fresh_schema("upgrade");
    let options = PostgresOptions::new().schema(&schema);
    let ids = three(
        &PostgresSaver::connect_with(&url, options.clone())
            .await
            .unwrap(),
        "old",
    )
    .await;
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .batch_execute(&format!(
            "SET search_path TO {schema}; DROP TABLE stategraph_thread_locks; {DOWNGRADE}"
        ))
        .await
        .unwrap();

    let saver = PostgresSaver::connect_with(&url, options).await.unwrap();
    let version: String = client
        .query_one(
            "SELECT value FROM stategraph_meta WHERE key = 'schema_version'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(version, stategraph_postgres::TABLE_VERSION.to_string());
    check_upgraded(&saver, "old", ids).await;
    // The upgrade also made the table a thread's lock writes its fence in.
    let lock = saver
        .lock_thread("old", Duration::from_secs(5))
        .await
        .unwrap();
    drop(lock);
    drop(saver);
    tokio::task::spawn_blocking(move || servers::drop_schema(&url, &schema))
        .await
        .unwrap();
}
