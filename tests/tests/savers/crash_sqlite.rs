//! Crash safety on SQLite: a worker running a 600-superstep graph with `Send` fan-out
//! is killed with SIGKILL at 20 random moments; each time a new worker continues the
//! thread. The final state equals an uninterrupted run's, no committed superstep is
//! lost, and no task whose writes were saved runs again (see `stategraph_tests::crash`).
//! Workers killed while they create or upgrade the database leave one that opens, keeps
//! every checkpoint, and runs the drill to the end.

use std::path::Path;
use std::time::Duration;

use stategraph::checkpoint::{CheckpointConfig, CheckpointSaver, ListOptions};
use stategraph_sqlite::{SqliteSaver, TABLE_VERSION};
use stategraph_tests::crash;
use stategraph_tests::workloads::Store;

/// Twenty kills of workers running the drill on `store`; every one lands, the thread
/// finishes its 600 steps, and some kill lands after a step's first writes were saved.
fn twenty_kills(store: &Store, dir: &Path, seed: u64) {
    let drill = crash::run(
        env!("CARGO_BIN_EXE_saver_worker").as_ref(),
        store,
        dir,
        300,
        20,
        seed,
    );
    eprintln!("{drill:?}");
    assert_eq!(drill.kills, 20);
    assert_eq!(drill.steps, 600);
    assert!(
        drill.kills_with_saved_writes > 0,
        "no kill landed after some tasks of a step had saved their writes: {drill:?}"
    );
}

#[test]
fn twenty_kills_lose_nothing_and_rerun_no_saved_task() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::Sqlite(dir.path().join("crash.db"));
    twenty_kills(&store, dir.path(), 0x5eed_0001);
}

/// The same drill with the saver at `Synchronous::Normal`, documented as keeping every
/// committed checkpoint across a crash of the process (not of the machine).
#[test]
fn twenty_kills_at_synchronous_normal_lose_nothing_and_rerun_no_saved_task() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::SqliteNormal(dir.path().join("crash.db"));
    twenty_kills(&store, dir.path(), 0x5eed_0002);
}

fn remove_database(path: &Path) {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

fn table_version(path: &Path) -> i64 {
    rusqlite::Connection::open(path)
        .unwrap()
        .query_row(
            "SELECT value FROM stategraph_meta WHERE key = 'schema_version'",
            [],
            |row| row.get::<_, String>(0),
        )
        .unwrap()
        .parse()
        .unwrap()
}

/// Back to table version 2 (before checkpoints carried their order), so the next
/// opener migrates.
fn downgrade(path: &Path) {
    if table_version(path) == TABLE_VERSION {
        rusqlite::Connection::open(path)
            .unwrap()
            .execute_batch(
                "DROP INDEX stategraph_checkpoints_seq;
                 ALTER TABLE stategraph_checkpoints DROP COLUMN seq;
                 UPDATE stategraph_meta SET value = '2' WHERE key = 'schema_version';",
            )
            .unwrap();
    }
}

fn history(path: &Path, thread: &str) -> Vec<String> {
    let saver = SqliteSaver::open(path).unwrap();
    futures::executor::block_on(saver.list(&CheckpointConfig::thread(thread), &ListOptions::new()))
        .unwrap()
        .into_iter()
        .map(|t| t.config.checkpoint_id.unwrap())
        .collect()
}

#[test]
fn kills_during_creation_and_migration_leave_a_database_that_opens_and_runs() {
    let worker: &Path = env!("CARGO_BIN_EXE_saver_worker").as_ref();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("opening.db");
    let store = Store::Sqlite(path.clone());

    let created = crash::kill_while_opening(
        worker,
        &store,
        30,
        Duration::from_millis(12),
        0x5eed_0003,
        || remove_database(&path),
    );
    eprintln!("creation: {created:?}");
    assert!(
        created.before_opened > 0,
        "no kill landed while opening: {created:?}"
    );
    assert_eq!(table_version(&path), TABLE_VERSION);

    // A thread written before the upgrade keeps every checkpoint, in order.
    let drill = crash::run(worker, &store, dir.path(), 4, 0, 0x5eed_0004);
    let thread = drill_thread(&path);
    let before = history(&path, &thread);
    assert_eq!(before.len() as i64, drill.steps + 2);
    let migrated = crash::kill_while_opening(
        worker,
        &store,
        30,
        Duration::from_millis(12),
        0x5eed_0005,
        || downgrade(&path),
    );
    eprintln!("migration: {migrated:?}");
    assert!(
        migrated.before_opened > 0,
        "no kill landed while opening: {migrated:?}"
    );
    assert_eq!(table_version(&path), TABLE_VERSION);
    assert_eq!(history(&path, &thread), before);

    let drill = crash::run(worker, &store, dir.path(), 300, 5, 0x5eed_0006);
    assert_eq!(drill.steps, 600);
}

/// The one thread in the database at `path`.
fn drill_thread(path: &Path) -> String {
    let saver = SqliteSaver::open(path).unwrap();
    let threads = futures::executor::block_on(saver.list_threads()).unwrap();
    assert_eq!(threads.len(), 1, "{threads:?}");
    threads[0].thread_id.clone()
}
