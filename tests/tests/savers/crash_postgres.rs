//! Crash safety on PostgreSQL: a worker running a 600-superstep graph with `Send`
//! fan-out is killed with SIGKILL at 20 random moments; each time a new worker
//! continues the thread (waiting, if needed, for the server to end the killed
//! worker's session and so release its thread lock). The final state equals an
//! uninterrupted run's, no committed superstep is lost, and no task whose writes were
//! saved runs again (see `stategraph_tests::crash`).
//!
//! Workers killed while they create or upgrade the tables leave a schema that opens,
//! keeps every checkpoint, and runs the drill to the end.
//!
//! Needs a server: set `STATEGRAPH_POSTGRES_URL` (see `stategraph_tests::servers`).

use std::path::Path;
use std::time::Duration;

use stategraph::checkpoint::{CheckpointConfig, ListOptions};
use stategraph_postgres::TABLE_VERSION;
use stategraph_tests::workloads::Store;
use stategraph_tests::{crash, servers};

#[test]
fn twenty_kills_lose_nothing_and_rerun_no_saved_task() {
    let Some(url) = servers::postgres_url(module_path!()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let schema = servers::fresh_schema("crash");
    let store = Store::Postgres {
        url: url.clone(),
        schema: schema.clone(),
    };
    let drill = crash::run(
        env!("CARGO_BIN_EXE_saver_worker").as_ref(),
        &store,
        dir.path(),
        300,
        20,
        0x5eed_0002,
    );
    eprintln!("{drill:?}");
    assert_eq!(drill.kills, 20);
    assert_eq!(drill.steps, 600);
    assert!(
        drill.kills_with_saved_writes > 0,
        "no kill landed after some tasks of a step had saved their writes: {drill:?}"
    );
    servers::drop_schema(&url, &schema);
}

/// Runs `sql` in `schema`, returning the first column of the first row, if any.
fn sql(url: &str, schema: &str, sql: &str) -> Option<String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .unwrap();
        let driver = tokio::spawn(connection);
        client
            .batch_execute(&format!("SET search_path TO {schema}"))
            .await
            .unwrap();
        let rows = client.simple_query(sql).await.unwrap();
        drop(client);
        let _ = driver.await;
        rows.into_iter().find_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_string),
            _ => None,
        })
    })
}

fn table_version(url: &str, schema: &str) -> Option<i64> {
    sql(
        url,
        schema,
        "SELECT value FROM stategraph_meta WHERE key = 'schema_version'",
    )
    .and_then(|v| v.parse().ok())
}

fn history(store: &Store, thread: &str) -> Vec<String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let saver = store.open().await.unwrap();
        saver
            .list(&CheckpointConfig::thread(thread), &ListOptions::new())
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.config.checkpoint_id.unwrap())
            .collect()
    })
}

#[test]
fn kills_during_creation_and_migration_leave_a_schema_that_opens_and_runs() {
    let Some(url) = servers::postgres_url(module_path!()) else {
        return;
    };
    let worker: &Path = env!("CARGO_BIN_EXE_saver_worker").as_ref();
    let dir = tempfile::tempdir().unwrap();
    let schema = servers::fresh_schema("opening");
    let store = Store::Postgres {
        url: url.clone(),
        schema: schema.clone(),
    };

    let created = crash::kill_while_opening(
        worker,
        &store,
        20,
        Duration::from_millis(80),
        0x5eed_0007,
        || servers::drop_schema(&url, &schema),
    );
    eprintln!("creation: {created:?}");
    assert!(
        created.before_opened > 0,
        "no kill landed while opening: {created:?}"
    );
    assert_eq!(table_version(&url, &schema), Some(TABLE_VERSION));

    // A thread written before the upgrade keeps every checkpoint, in order.
    let drill = crash::run(worker, &store, dir.path(), 4, 0, 0x5eed_0008);
    let thread = sql(
        &url,
        &schema,
        "SELECT DISTINCT thread_id FROM stategraph_checkpoints",
    )
    .expect("the drill's thread");
    let before = history(&store, &thread);
    assert_eq!(before.len() as i64, drill.steps + 2);
    let migrated = crash::kill_while_opening(
        worker,
        &store,
        20,
        Duration::from_millis(80),
        0x5eed_0009,
        || {
            if table_version(&url, &schema) == Some(TABLE_VERSION) {
                sql(
                    &url,
                    &schema,
                    "DROP TABLE stategraph_thread_locks;
                 DROP INDEX stategraph_checkpoints_seq;
                 ALTER TABLE stategraph_checkpoints DROP COLUMN seq;
                 UPDATE stategraph_meta SET value = '2' WHERE key = 'schema_version';",
                );
            }
        },
    );
    eprintln!("migration: {migrated:?}");
    assert!(
        migrated.before_opened > 0,
        "no kill landed while opening: {migrated:?}"
    );
    assert_eq!(table_version(&url, &schema), Some(TABLE_VERSION));
    assert_eq!(history(&store, &thread), before);

    let drill = crash::run(worker, &store, dir.path(), 300, 5, 0x5eed_000a);
    assert_eq!(drill.steps, 600);
    servers::drop_schema(&url, &schema);
}
