//! Damaged stores give errors that say what is wrong and where: a table version that
//! cannot be read, an appended value of the wrong shape, a write index out of range.
//! An empty file is a new SQLite database (as SQLite takes it).

use std::collections::BTreeMap;

use serde_json::json;
use stategraph::checkpoint::{
    CheckpointConfig, CheckpointError, CheckpointMetadata, CheckpointSaver, CheckpointSource,
    InMemorySaver, PendingWrite, StoredValue, channel_value,
};
use stategraph_postgres::{PostgresError, PostgresOptions, PostgresSaver};
use stategraph_sqlite::{SqliteError, SqliteSaver};
use stategraph_tests::{conformance, servers};

fn sqlite_error(err: &CheckpointError) -> &SqliteError {
    match err {
        CheckpointError::Storage { source, .. } => source
            .downcast_ref::<SqliteError>()
            .unwrap_or_else(|| panic!("not a SqliteError: {err:?}")),
        other => panic!("expected a storage error, got {other:?}"),
    }
}

fn postgres_error(err: &CheckpointError) -> &PostgresError {
    match err {
        CheckpointError::Storage { source, .. } => source
            .downcast_ref::<PostgresError>()
            .unwrap_or_else(|| panic!("not a PostgresError: {err:?}")),
        other => panic!("expected a storage error, got {other:?}"),
    }
}

/// A SQLite database of the saver whose table version was changed by `damage`.
fn sqlite_with(damage: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("damaged.db");
    drop(SqliteSaver::open(&path).unwrap());
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch(damage)
        .unwrap();
    (dir, path)
}

#[test]
fn sqlite_tables_without_a_version_are_refused_saying_so() {
    let (_dir, path) = sqlite_with("DELETE FROM stategraph_meta");
    let err = SqliteSaver::open(&path).unwrap_err();
    assert!(
        matches!(sqlite_error(&err), SqliteError::MissingTableVersion { .. }),
        "{err}"
    );
    let text = err.to_string();
    assert!(text.contains("no `schema_version`"), "{text}");
    assert!(!text.contains("already exists"), "{text}");

    let (_dir, path) = sqlite_with("DROP TABLE stategraph_meta");
    let err = SqliteSaver::open(&path).unwrap_err();
    assert!(
        matches!(sqlite_error(&err), SqliteError::MissingTableVersion { .. }),
        "{err}"
    );
}

#[test]
fn sqlite_table_versions_below_one_are_refused_naming_the_value() {
    for (stored, shown) in [("'0'", "0"), ("'-1'", "-1"), ("0", "0")] {
        let (_dir, path) = sqlite_with(&format!(
            "UPDATE stategraph_meta SET value = {stored} WHERE key = 'schema_version'"
        ));
        let err = SqliteSaver::open(&path).unwrap_err();
        assert!(
            matches!(sqlite_error(&err), SqliteError::BadTableVersion { value, .. } if value == shown),
            "{stored}: {err}"
        );
        assert!(!err.to_string().contains("already exists"), "{err}");
    }
}

#[test]
fn an_empty_file_is_a_new_sqlite_database() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.db");
    std::fs::write(&path, b"").unwrap();
    let saver = SqliteSaver::open(&path).unwrap();
    let threads = futures::executor::block_on(saver.list_threads()).unwrap();
    assert!(threads.is_empty());
    assert!(std::fs::metadata(&path).unwrap().len() > 0);
}

#[tokio::test]
async fn postgres_tables_without_a_version_are_refused_saying_so() {
    let Some(url) = servers::postgres_url(module_path!()) else {
        return;
    };
    let schema = servers::fresh_schema("noversion");
    let options = PostgresOptions::new().schema(&schema);
    drop(
        PostgresSaver::connect_with(&url, options.clone())
            .await
            .unwrap(),
    );
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .batch_execute(&format!("DELETE FROM {schema}.stategraph_meta"))
        .await
        .unwrap();
    let err = PostgresSaver::connect_with(&url, options.clone())
        .await
        .unwrap_err();
    assert!(
        matches!(
            postgres_error(&err),
            PostgresError::MissingTableVersion { .. }
        ),
        "{err}"
    );
    assert!(!err.to_string().contains("already exists"), "{err}");

    client
        .batch_execute(&format!(
            "INSERT INTO {schema}.stategraph_meta VALUES ('schema_version', '-1')"
        ))
        .await
        .unwrap();
    let err = PostgresSaver::connect_with(&url, options)
        .await
        .unwrap_err();
    assert!(
        matches!(postgres_error(&err), PostgresError::BadTableVersion { value, .. } if value == "-1"),
        "{err}"
    );
    tokio::task::spawn_blocking(move || servers::drop_schema(&url, &schema))
        .await
        .unwrap();
}

/// A thread whose channel `log` has a whole value at version 1 and `second` stored at
/// version 2; the tuple of its second checkpoint.
async fn log_thread(
    saver: &dyn CheckpointSaver,
    first: serde_json::Value,
    second: StoredValue,
) -> stategraph::checkpoint::CheckpointTuple {
    let mut config = CheckpointConfig::thread("shapes");
    for (version, value) in [(1u64, StoredValue::Full(first)), (2, second)] {
        let mut checkpoint = conformance::checkpoint(version);
        checkpoint.channel_values = BTreeMap::from([("log".to_string(), value)]);
        checkpoint.channel_versions = BTreeMap::from([("log".to_string(), version)]);
        checkpoint.channel_bases = BTreeMap::from([("log".to_string(), 1)]);
        config = saver
            .put(
                &config,
                checkpoint,
                CheckpointMetadata::new(CheckpointSource::Loop, version as i64),
            )
            .await
            .unwrap();
    }
    saver.get_tuple(&config).await.unwrap().unwrap()
}

#[tokio::test]
async fn an_appended_value_of_the_wrong_shape_is_named_not_missing() {
    let saver = InMemorySaver::new();
    let tuple = log_thread(&saver, json!(["a"]), StoredValue::Append(json!({"b": 1}))).await;
    let err = channel_value(&saver, &tuple, "log").await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, CheckpointError::Invalid { .. }), "{err:?}");
    assert!(
        text.contains("channel `log` version 2") && text.contains("must be a list"),
        "{text}"
    );
    assert!(!text.contains("missing"), "{text}");

    let saver = InMemorySaver::new();
    let tuple = log_thread(&saver, json!("a"), StoredValue::Append(json!(["b"]))).await;
    let err = channel_value(&saver, &tuple, "log").await.unwrap_err();
    assert!(matches!(err, CheckpointError::Invalid { .. }), "{err:?}");
    assert!(err.to_string().contains("not a list (a string)"), "{err}");
}

/// One checkpoint with one pending write of task `t1`; its config.
async fn with_a_write(saver: &dyn CheckpointSaver) -> CheckpointConfig {
    let config = saver
        .put(
            &CheckpointConfig::thread("writes"),
            conformance::checkpoint(1),
            CheckpointMetadata::new(CheckpointSource::Input, -1),
        )
        .await
        .unwrap();
    saver
        .put_writes(
            &config,
            vec![PendingWrite {
                task_id: "t1".into(),
                idx: 0,
                channel: "update".into(),
                value: json!({}),
            }],
        )
        .await
        .unwrap();
    config
}

fn assert_names_the_write(err: &CheckpointError, config: &CheckpointConfig) {
    let text = err.to_string();
    assert!(matches!(err, CheckpointError::Invalid { .. }), "{err:?}");
    let id = config.checkpoint_id.as_deref().unwrap();
    for part in [
        "task t1",
        id,
        "thread `writes`",
        "4294967296",
        "out of range",
    ] {
        assert!(text.contains(part), "{part:?} not in {text}");
    }
}

#[tokio::test]
async fn a_sqlite_write_index_out_of_range_names_the_row() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idx.db");
    let saver = SqliteSaver::open(&path).unwrap();
    let config = with_a_write(&saver).await;
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute("UPDATE stategraph_writes SET idx = 4294967296", [])
        .unwrap();
    let err = saver.get_tuple(&config).await.unwrap_err();
    assert_names_the_write(&err, &config);
}

#[tokio::test]
async fn a_postgres_write_index_out_of_range_names_the_row() {
    let Some(url) = servers::postgres_url(module_path!()) else {
        return;
    };
    let schema = servers::fresh_schema("badidx");
    let saver = PostgresSaver::connect_with(&url, PostgresOptions::new().schema(&schema))
        .await
        .unwrap();
    let config = with_a_write(&saver).await;
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .batch_execute(&format!(
            "UPDATE {schema}.stategraph_writes SET idx = 4294967296"
        ))
        .await
        .unwrap();
    let err = saver.get_tuple(&config).await.unwrap_err();
    assert_names_the_write(&err, &config);
    drop(saver);
    tokio::task::spawn_blocking(move || servers::drop_schema(&url, &schema))
        .await
        .unwrap();
}
