//! The SQLite saver: passes the conformance suite on a file and again on reopening it;
//! a thread run by one saver is continued by another on the same file; corrupt rows,
//! oversize records, newer tables and a missing directory are clear errors.

use std::path::{Path, PathBuf};

use stategraph::checkpoint::{
    CheckpointConfig, CheckpointError, CheckpointMetadata, CheckpointSaver, CheckpointSource,
    ListOptions, StoredValue,
};
use stategraph::prelude::*;
use stategraph_sqlite::{SqliteError, SqliteOptions, SqliteSaver, TABLE_VERSION};
use stategraph_tests::conformance;

fn db(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("checkpoints.db")
}

/// A second connection, as another program would open the file.
fn raw(path: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(path).unwrap()
}

/// Puts `n` chained conformance checkpoints on `thread`; returns their configs.
async fn chain(saver: &SqliteSaver, thread: &str, n: u64) -> Vec<CheckpointConfig> {
    let mut config = CheckpointConfig::thread(thread);
    let mut out = Vec::new();
    for version in 1..=n {
        config = saver
            .put(
                &config,
                conformance::checkpoint(version),
                CheckpointMetadata::new(CheckpointSource::Loop, version as i64),
            )
            .await
            .unwrap();
        out.push(config.clone());
    }
    out
}

/// The SQLite error behind a `Storage` error.
fn sqlite_error(err: &CheckpointError) -> &SqliteError {
    match err {
        CheckpointError::Storage {
            saver: "sqlite",
            source,
            ..
        } => source
            .downcast_ref::<SqliteError>()
            .unwrap_or_else(|| panic!("not a SqliteError: {source:?}")),
        other => panic!("expected a sqlite Storage error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passes_the_conformance_suite_on_a_file_and_after_reopening_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);

    let saver = SqliteSaver::open(&path).unwrap();
    conformance::run_all(&saver).await;
    let configs = chain(&saver, "kept", 3).await;
    let before = saver
        .list(&CheckpointConfig::thread("kept"), &ListOptions::new())
        .await
        .unwrap();
    drop(saver);

    let reopened = SqliteSaver::open(&path).unwrap();
    let after = reopened
        .list(&CheckpointConfig::thread("kept"), &ListOptions::new())
        .await
        .unwrap();
    assert_eq!(after, before, "a reopened file holds what was stored");
    assert_eq!(after[0].config, configs[2]);
    // The suite again, on a file that already holds its earlier threads.
    conformance::run_all(&reopened).await;
}

#[tokio::test]
async fn passes_the_conformance_suite_in_memory_and_on_a_current_thread_runtime() {
    let saver = SqliteSaver::open_in_memory().unwrap();
    conformance::run_all(&saver).await;
}

#[test]
fn works_without_an_async_runtime() {
    let saver = SqliteSaver::open_in_memory().unwrap();
    let got = futures::executor::block_on(async {
        let config = saver
            .put(
                &CheckpointConfig::thread("plain"),
                conformance::checkpoint(1),
                CheckpointMetadata::new(CheckpointSource::Input, -1),
            )
            .await
            .unwrap();
        saver.get_tuple(&config).await.unwrap()
    });
    assert_eq!(got.unwrap().checkpoint.channel_versions["count"], 1);
}

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Journal {
    #[reducer(append)]
    entries: Vec<String>,
    #[reducer(add)]
    count: u32,
    /// Last value: how many entries the run should reach.
    goal: u32,
}

#[node]
fn write_entry(s: &Journal, _ctx: &NodeContext) -> JournalUpdate {
    Journal::update()
        .entries([format!("entry {}", s.count + 1)])
        .count(1)
}

fn journal(saver: SqliteSaver) -> CompiledGraph<Journal> {
    StateGraph::<Journal>::new()
        .add_node(write_entry)
        .add_edge(START, write_entry)
        .add_conditional_edges(
            write_entry,
            |s: &Journal| {
                if s.count < s.goal {
                    Route::to(write_entry)
                } else {
                    Route::end()
                }
            },
            (write_entry, END),
        )
        .compile_with(CompileOptions::new().checkpointer(saver))
        .unwrap()
}

fn entries(n: u32) -> Vec<String> {
    (1..=n).map(|i| format!("entry {i}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_saver_on_the_same_file_continues_the_thread() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let thread = RunConfig::new().thread("t");

    // The first process stops at its recursion limit, three steps into a run of five.
    let first = journal(SqliteSaver::open(&path).unwrap());
    let err = first
        .invoke(
            Journal::update().goal(5),
            &thread.clone().recursion_limit(3),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, RunError::RecursionLimit { .. }), "{err:?}");
    drop(first);

    // A second one, with its own saver on the file, sees where it stopped...
    let second = journal(SqliteSaver::open(&path).unwrap());
    let saved = second.get_state(&thread).await.unwrap().unwrap();
    assert_eq!(saved.values.entries, entries(3));
    assert_eq!(saved.values.goal, 5);
    assert_eq!(saved.next, ["write_entry"]);

    // ...and finishes the run.
    let out = second.invoke(None, &thread).await.unwrap();
    assert_eq!(out.values.entries, entries(5));
    assert_eq!(out.values.count, 5);
    assert_eq!(out.steps, 2);

    // The history is whole: input, then one checkpoint per step, each restorable.
    let history = second
        .get_state_history(&thread, &ListOptions::new())
        .await
        .unwrap();
    let steps: Vec<i64> = history.iter().map(|s| s.metadata.step).collect();
    assert_eq!(steps, [4, 3, 2, 1, 0, -1]);
    for (snapshot, n) in history.iter().zip([5, 4, 3, 2, 1, 0]) {
        assert_eq!(snapshot.values.entries, entries(n));
    }

    // New input on the finished thread, from yet another saver.
    let third = journal(SqliteSaver::open(&path).unwrap());
    let out = third
        .invoke(Journal::update().goal(7), &thread)
        .await
        .unwrap();
    assert_eq!(out.values.entries, entries(7));
}

#[tokio::test]
async fn a_fork_leaves_the_old_branch_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let graph = journal(SqliteSaver::open(&path).unwrap());
    let thread = RunConfig::new().thread("forked");
    graph
        .invoke(Journal::update().goal(4), &thread)
        .await
        .unwrap();
    let old = graph
        .get_state_history(&thread, &ListOptions::new())
        .await
        .unwrap();
    let step1 = old.iter().find(|s| s.metadata.step == 1).unwrap();
    let id = step1.config.checkpoint_id.clone().unwrap();

    let out = graph
        .invoke(Journal::update().goal(6), &thread.clone().checkpoint(id))
        .await
        .unwrap();
    assert_eq!(out.values.entries, entries(6));

    let graph = journal(SqliteSaver::open(&path).unwrap());
    for before in &old {
        let id = before.config.checkpoint_id.clone().unwrap();
        let now = graph
            .get_state(&thread.clone().checkpoint(id))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(now.values, before.values);
    }
}

#[tokio::test]
async fn a_corrupt_row_is_a_clear_error_and_other_threads_stay_readable() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let saver = SqliteSaver::open(&path).unwrap();
    let bad = chain(&saver, "bad", 2).await;
    let good = chain(&saver, "good", 2).await;
    let bad_id = bad[1].checkpoint_id.clone().unwrap();

    let changed = raw(&path)
        .execute(
            "UPDATE stategraph_checkpoints SET checkpoint = '{\"v\": 1, \"id\": garbage'
             WHERE thread_id = 'bad' AND checkpoint_id = ?1",
            [&bad_id],
        )
        .unwrap();
    assert_eq!(changed, 1);

    for result in [
        saver.get_tuple(&CheckpointConfig::thread("bad")).await,
        saver.get_tuple(&bad[1]).await,
    ] {
        let err = result.unwrap_err();
        let CheckpointError::Corrupt { what, .. } = &err else {
            panic!("expected Corrupt, got {err:?}");
        };
        assert!(
            what.contains(&bad_id) && what.contains("thread `bad`"),
            "{what}"
        );
        assert!(err.to_string().contains("is corrupt"), "{err}");
    }
    let err = saver
        .list(&CheckpointConfig::thread("bad"), &ListOptions::new())
        .await
        .unwrap_err();
    assert!(matches!(err, CheckpointError::Corrupt { .. }), "{err:?}");

    // The older checkpoint of the same thread and the other thread are fine.
    assert!(saver.get_tuple(&bad[0]).await.unwrap().is_some());
    let latest = saver
        .get_tuple(&CheckpointConfig::thread("good"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(latest.config, good[1]);

    // A corrupt value or metadata row names its channel or checkpoint too.
    let conn = raw(&path);
    conn.execute(
        "UPDATE stategraph_values SET value = 'nope' WHERE thread_id = 'good' AND channel = 'log' AND version = 2",
        [],
    )
    .unwrap();
    let err = saver
        .channel_history(&good[1], "log", 1, 2)
        .await
        .unwrap_err();
    let CheckpointError::Corrupt { what, .. } = &err else {
        panic!("expected Corrupt, got {err:?}");
    };
    assert!(what.contains("channel `log` version 2"), "{what}");
    conn.execute(
        "UPDATE stategraph_checkpoints SET metadata = 42 WHERE thread_id = 'good'",
        [],
    )
    .unwrap();
    let err = saver.get_tuple(&good[0]).await.unwrap_err();
    let CheckpointError::Corrupt { what, .. } = &err else {
        panic!("expected Corrupt, got {err:?}");
    };
    assert!(what.starts_with("metadata of checkpoint"), "{what}");
}

#[tokio::test]
async fn a_checkpoint_of_a_newer_format_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let saver = SqliteSaver::open(&path).unwrap();
    let configs = chain(&saver, "future", 1).await;
    raw(&path)
        .execute(
            "UPDATE stategraph_checkpoints SET checkpoint = json_set(checkpoint, '$.v', 99, '$.channel_versions', 'reshaped')",
            [],
        )
        .unwrap();
    let err = saver.get_tuple(&configs[0]).await.unwrap_err();
    assert!(
        matches!(
            err,
            CheckpointError::UnsupportedFormat {
                found: 99,
                supported: 1,
                ..
            }
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn records_over_the_size_limit_are_refused_when_written_and_when_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let mut bigger = conformance::checkpoint(1);
    bigger.channel_values.insert(
        "count".into(),
        StoredValue::Full(serde_json::json!("x".repeat(4096))),
    );

    let small = SqliteSaver::open_with(&path, SqliteOptions::new().max_record_bytes(1024)).unwrap();
    let meta = CheckpointMetadata::new(CheckpointSource::Input, -1);
    let err = small
        .put(
            &CheckpointConfig::thread("big"),
            bigger.clone(),
            meta.clone(),
        )
        .await
        .unwrap_err();
    let CheckpointError::Oversize { what, size, limit } = &err else {
        panic!("expected Oversize, got {err:?}");
    };
    assert!(what.contains("channel `count`"), "{what}");
    assert!(*size > 4096 && *limit == 1024, "{err}");
    assert!(
        small
            .get_tuple(&CheckpointConfig::thread("big"))
            .await
            .unwrap()
            .is_none(),
        "nothing of a refused put is stored"
    );

    let roomy = SqliteSaver::open(&path).unwrap();
    let config = roomy
        .put(&CheckpointConfig::thread("big"), bigger, meta)
        .await
        .unwrap();
    let err = small.get_tuple(&config).await.unwrap_err();
    assert!(matches!(err, CheckpointError::Oversize { .. }), "{err:?}");
    assert!(err.to_string().contains("raise the saver's limit"), "{err}");
    assert!(roomy.get_tuple(&config).await.unwrap().is_some());
}

#[tokio::test]
async fn a_database_with_newer_tables_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let saver = SqliteSaver::open(&path).unwrap();
    chain(&saver, "t", 2).await;
    drop(saver);
    let newer = TABLE_VERSION + 1;
    let conn = raw(&path);
    conn.execute(
        "UPDATE stategraph_meta SET value = ?1 WHERE key = 'schema_version'",
        [newer.to_string()],
    )
    .unwrap();
    // Fold the log into the main file, so the file alone is the whole database.
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode = DELETE")
        .unwrap();
    drop(conn);
    let bytes = std::fs::read(&path).unwrap();

    let err = SqliteSaver::open(&path).unwrap_err();
    match sqlite_error(&err) {
        SqliteError::NewerTables {
            found, supported, ..
        } => assert_eq!((*found, *supported), (newer, TABLE_VERSION)),
        other => panic!("expected NewerTables, got {other:?}"),
    }
    let message = format!("{err}: {}", sqlite_error(&err));
    assert!(message.contains("newer"), "{message}");
    assert!(message.contains("upgrade stategraph-sqlite"), "{message}");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        bytes,
        "the file is unchanged"
    );
    let journal_mode: String = raw(&path)
        .query_row("PRAGMA journal_mode", [], |row| row.get(0))
        .unwrap();
    assert_eq!(journal_mode, "delete", "not even switched to WAL");
}

#[test]
fn a_path_in_a_missing_directory_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no").join("such");
    let err = SqliteSaver::open(missing.join("checkpoints.db")).unwrap_err();
    match sqlite_error(&err) {
        SqliteError::MissingDirectory { dir } => assert_eq!(dir, &missing),
        other => panic!("expected MissingDirectory, got {other:?}"),
    }
    let message = sqlite_error(&err).to_string();
    assert!(message.contains("does not exist"), "{message}");
    assert!(!missing.exists(), "nothing was created");
}

#[test]
fn a_file_that_is_not_a_database_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    std::fs::write(&path, "these are not the pages you are looking for").unwrap();
    let err = SqliteSaver::open(&path).unwrap_err();
    assert!(
        matches!(sqlite_error(&err), SqliteError::Open { .. }),
        "{err:?}"
    );
    let message = sqlite_error(&err).to_string();
    assert!(message.contains("checkpoints.db"), "{message}");
}

#[tokio::test]
async fn an_application_database_gains_the_tables_and_keeps_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    raw(&path)
        .execute_batch(
            "CREATE TABLE orders (id INTEGER PRIMARY KEY); INSERT INTO orders VALUES (7);",
        )
        .unwrap();
    let saver = SqliteSaver::open(&path).unwrap();
    let configs = chain(&saver, "t", 1).await;
    assert!(saver.get_tuple(&configs[0]).await.unwrap().is_some());
    let id: i64 = raw(&path)
        .query_row("SELECT id FROM orders", [], |row| row.get(0))
        .unwrap();
    assert_eq!(id, 7);
    let version: String = raw(&path)
        .query_row(
            "SELECT value FROM stategraph_meta WHERE key = 'schema_version'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(version, TABLE_VERSION.to_string());
}

#[test]
fn a_table_version_that_is_not_a_number_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    drop(SqliteSaver::open(&path).unwrap());
    raw(&path)
        .execute(
            "UPDATE stategraph_meta SET value = 'two' WHERE key = 'schema_version'",
            [],
        )
        .unwrap();
    let err = SqliteSaver::open(&path).unwrap_err();
    let inner = sqlite_error(&err);
    assert!(
        matches!(inner, SqliteError::BadTableVersion { value, .. } if value == "two"),
        "{inner:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_savers_on_one_file_write_at_once_and_see_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let savers = [
        SqliteSaver::open(&path).unwrap(),
        SqliteSaver::open(&path).unwrap(),
    ];
    let tasks: Vec<_> = savers
        .iter()
        .enumerate()
        .map(|(i, saver)| {
            let saver = saver.clone();
            tokio::spawn(async move { chain(&saver, &format!("writer-{i}"), 20).await })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    for saver in &savers {
        for i in 0..2 {
            let all = saver
                .list(
                    &CheckpointConfig::thread(format!("writer-{i}")),
                    &ListOptions::new(),
                )
                .await
                .unwrap();
            assert_eq!(all.len(), 20);
        }
    }
}
