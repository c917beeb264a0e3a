//! The PostgreSQL saver: passes the conformance suite (in the default schema and in a
//! schema of its own); a thread run by one saver is continued by another; corrupt rows,
//! oversize records, newer tables, a wrong password, an unreachable server and bad
//! settings are clear errors that damage nothing.
//!
//! Needs a server: set `STATEGRAPH_POSTGRES_URL` (see `stategraph_tests::servers`).

use stategraph::checkpoint::{
    CheckpointConfig, CheckpointError, CheckpointMetadata, CheckpointSaver, CheckpointSource,
    ListOptions, StoredValue,
};
use stategraph::prelude::*;
use stategraph_postgres::{PostgresError, PostgresOptions, PostgresSaver, TABLE_VERSION};
use stategraph_tests::{conformance, servers};

macro_rules! server {
    () => {
        match servers::postgres_url(module_path!()) {
            Some(url) => url,
            None => return,
        }
    };
}

/// A plain client, as another program would connect, with `schema` first on its path.
async fn raw(url: &str, schema: Option<&str>) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    if let Some(schema) = schema {
        client
            .batch_execute(&format!("SET search_path TO {schema}"))
            .await
            .unwrap();
    }
    client
}

async fn in_schema(url: &str, schema: &str) -> PostgresSaver {
    PostgresSaver::connect_with(url, PostgresOptions::new().schema(schema))
        .await
        .unwrap()
}

async fn drop_schema(url: &str, schema: &str) {
    raw(url, None)
        .await
        .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .await
        .unwrap();
}

/// Puts `n` chained conformance checkpoints on `thread`; returns their configs.
async fn chain(saver: &PostgresSaver, thread: &str, n: u64) -> Vec<CheckpointConfig> {
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

/// The PostgreSQL error behind a `Storage` error.
fn pg_error(err: &CheckpointError) -> &PostgresError {
    match err {
        CheckpointError::Storage {
            saver: "postgres",
            source,
            ..
        } => source
            .downcast_ref::<PostgresError>()
            .unwrap_or_else(|| panic!("not a PostgresError: {source:?}")),
        other => panic!("expected a postgres Storage error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passes_the_conformance_suite_and_again_on_a_new_connection() {
    let url = server!();
    let saver = PostgresSaver::connect(&url).await.unwrap();
    conformance::run_all(&saver).await;
    let thread = format!("kept-{}", servers::fresh_schema("t"));
    let configs = chain(&saver, &thread, 3).await;
    let before = saver
        .list(&CheckpointConfig::thread(&thread), &ListOptions::new())
        .await
        .unwrap();
    drop(saver);

    let again = PostgresSaver::connect(&url).await.unwrap();
    let after = again
        .list(&CheckpointConfig::thread(&thread), &ListOptions::new())
        .await
        .unwrap();
    assert_eq!(after, before, "a new connection reads what was stored");
    assert_eq!(after[0].config, configs[2]);
    conformance::run_all(&again).await;
}

#[tokio::test]
async fn passes_the_conformance_suite_in_a_schema_of_its_own() {
    let url = server!();
    let schema = servers::fresh_schema("conformance");
    let saver = in_schema(&url, &schema).await;
    conformance::run_all(&saver).await;
    let tables: i64 = raw(&url, None)
        .await
        .query_one(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = $1",
            &[&schema],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        tables, 6,
        "meta, checkpoints, writes, values, the node cache and the thread fences live in it"
    );
    drop_schema(&url, &schema).await;
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

fn journal(saver: PostgresSaver) -> CompiledGraph<Journal> {
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
async fn a_new_saver_continues_the_thread_another_stopped() {
    let url = server!();
    let schema = servers::fresh_schema("journal");
    let thread = RunConfig::new().thread("t");

    let first = journal(in_schema(&url, &schema).await);
    let err = first
        .invoke(
            Journal::update().goal(5),
            &thread.clone().recursion_limit(3),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, RunError::RecursionLimit { .. }), "{err:?}");
    drop(first);

    let second = journal(in_schema(&url, &schema).await);
    let saved = second.get_state(&thread).await.unwrap().unwrap();
    assert_eq!(saved.values.entries, entries(3));
    assert_eq!(saved.next, ["write_entry"]);
    let out = second.invoke(None, &thread).await.unwrap();
    assert_eq!(out.values.entries, entries(5));
    assert_eq!(out.steps, 2);

    let history = second
        .get_state_history(&thread, &ListOptions::new())
        .await
        .unwrap();
    let steps: Vec<i64> = history.iter().map(|s| s.metadata.step).collect();
    assert_eq!(steps, [4, 3, 2, 1, 0, -1]);
    for (snapshot, n) in history.iter().zip([5, 4, 3, 2, 1, 0]) {
        assert_eq!(snapshot.values.entries, entries(n));
    }
    // A value is stored once per version, and append channels store deltas.
    let stored: Vec<String> = raw(&url, Some(&schema))
        .await
        .query(
            "SELECT value FROM stategraph_values WHERE thread_id = 't' AND channel = 'entries' ORDER BY version",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(stored.len(), 5, "{stored:?}");
    assert!(
        stored
            .iter()
            .any(|v| v.contains("\"append\"") && v.matches("entry").count() == 1),
        "{stored:?}"
    );
    drop_schema(&url, &schema).await;
}

#[tokio::test]
async fn a_corrupt_row_is_a_clear_error_and_other_threads_stay_readable() {
    let url = server!();
    let schema = servers::fresh_schema("corrupt");
    let saver = in_schema(&url, &schema).await;
    let bad = chain(&saver, "bad", 2).await;
    let good = chain(&saver, "good", 2).await;
    let bad_id = bad[1].checkpoint_id.clone().unwrap();
    let conn = raw(&url, Some(&schema)).await;

    let changed = conn
        .execute(
            "UPDATE stategraph_checkpoints SET checkpoint = '{\"v\": 1, \"id\": garbage'
             WHERE thread_id = 'bad' AND checkpoint_id = $1",
            &[&bad_id],
        )
        .await
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

    assert!(saver.get_tuple(&bad[0]).await.unwrap().is_some());
    let latest = saver
        .get_tuple(&CheckpointConfig::thread("good"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(latest.config, good[1]);

    conn.execute(
        "UPDATE stategraph_values SET value = 'nope' WHERE thread_id = 'good' AND channel = 'log' AND version = 2",
        &[],
    )
    .await
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
        "UPDATE stategraph_checkpoints SET metadata = '42' WHERE thread_id = 'good'",
        &[],
    )
    .await
    .unwrap();
    let err = saver.get_tuple(&good[0]).await.unwrap_err();
    let CheckpointError::Corrupt { what, .. } = &err else {
        panic!("expected Corrupt, got {err:?}");
    };
    assert!(what.starts_with("metadata of checkpoint"), "{what}");
    drop_schema(&url, &schema).await;
}

#[tokio::test]
async fn records_over_the_size_limit_are_refused_when_written_and_when_read() {
    let url = server!();
    let schema = servers::fresh_schema("oversize");
    let mut bigger = conformance::checkpoint(1);
    bigger.channel_values.insert(
        "count".into(),
        StoredValue::Full(serde_json::json!("x".repeat(4096))),
    );
    let small = PostgresSaver::connect_with(
        &url,
        PostgresOptions::new()
            .schema(&schema)
            .max_record_bytes(1024),
    )
    .await
    .unwrap();
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

    let roomy = in_schema(&url, &schema).await;
    let config = roomy
        .put(&CheckpointConfig::thread("big"), bigger, meta)
        .await
        .unwrap();
    let err = small.get_tuple(&config).await.unwrap_err();
    assert!(matches!(err, CheckpointError::Oversize { .. }), "{err:?}");
    assert!(roomy.get_tuple(&config).await.unwrap().is_some());
    drop_schema(&url, &schema).await;
}

/// Every row of the saver's tables in `schema`, as text, in a fixed order.
async fn dump(url: &str, schema: &str) -> Vec<String> {
    let conn = raw(url, Some(schema)).await;
    let mut out = Vec::new();
    for table in [
        "stategraph_meta",
        "stategraph_checkpoints",
        "stategraph_writes",
        "stategraph_values",
    ] {
        let rows = conn
            .query(
                &format!("SELECT t::text FROM {table} t ORDER BY t::text"),
                &[],
            )
            .await
            .unwrap();
        out.extend(
            rows.iter()
                .map(|r| format!("{table}: {}", r.get::<_, String>(0))),
        );
    }
    out
}

#[tokio::test]
async fn a_database_with_newer_tables_is_refused_and_left_untouched() {
    let url = server!();
    let schema = servers::fresh_schema("newer");
    let saver = in_schema(&url, &schema).await;
    chain(&saver, "t", 2).await;
    drop(saver);
    let newer = TABLE_VERSION + 1;
    raw(&url, Some(&schema))
        .await
        .execute(
            "UPDATE stategraph_meta SET value = $1 WHERE key = 'schema_version'",
            &[&newer.to_string()],
        )
        .await
        .unwrap();
    let before = dump(&url, &schema).await;
    assert!(before.len() > 5, "{before:?}");

    let err = PostgresSaver::connect_with(&url, PostgresOptions::new().schema(&schema))
        .await
        .unwrap_err();
    match pg_error(&err) {
        PostgresError::NewerTables {
            found, supported, ..
        } => assert_eq!((*found, *supported), (newer, TABLE_VERSION)),
        other => panic!("expected NewerTables, got {other:?}"),
    }
    let message = format!("{err}");
    assert!(message.contains("newer"), "{message}");
    assert!(message.contains("upgrade stategraph-postgres"), "{message}");
    assert_eq!(dump(&url, &schema).await, before, "nothing was modified");
    drop_schema(&url, &schema).await;
}

#[tokio::test]
async fn a_table_version_that_is_not_a_number_is_a_clear_error() {
    let url = server!();
    let schema = servers::fresh_schema("badversion");
    drop(in_schema(&url, &schema).await);
    raw(&url, Some(&schema))
        .await
        .execute(
            "UPDATE stategraph_meta SET value = 'two' WHERE key = 'schema_version'",
            &[],
        )
        .await
        .unwrap();
    let err = PostgresSaver::connect_with(&url, PostgresOptions::new().schema(&schema))
        .await
        .unwrap_err();
    let inner = pg_error(&err);
    assert!(
        matches!(inner, PostgresError::BadTableVersion { value, .. } if value == "two"),
        "{inner:?}"
    );
    drop_schema(&url, &schema).await;
}

#[tokio::test]
async fn a_wrong_password_is_a_clear_error_that_does_not_echo_it() {
    let url = server!();
    let mut config: tokio_postgres::Config = url.parse().unwrap();
    config.password("definitely-not-the-password");
    let user = config.get_user().unwrap().to_string();
    let host = match &config.get_hosts()[0] {
        tokio_postgres::config::Host::Tcp(h) => h.clone(),
        tokio_postgres::config::Host::Unix(p) => p.display().to_string(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let db = config.get_dbname().unwrap_or(&user).to_string();
    let wrong = format!("postgres://{user}:definitely-not-the-password@{host}:{port}/{db}");

    let err = PostgresSaver::connect(&wrong).await.unwrap_err();
    let inner = pg_error(&err);
    assert!(matches!(inner, PostgresError::Connect { .. }), "{inner:?}");
    let message = err.to_string();
    assert!(
        message.contains("password authentication failed"),
        "{message}"
    );
    assert!(message.contains(&format!("user `{user}`")), "{message}");
    assert!(
        message.contains("check that the server is running"),
        "{message}"
    );
    assert!(
        !message.contains("definitely-not-the-password"),
        "{message}"
    );
}

#[tokio::test]
async fn an_unreachable_server_is_a_clear_error() {
    // Nothing listens on port 1 of the loopback address.
    let err = PostgresSaver::connect_with(
        "postgres://someone:secret@127.0.0.1:1/nothing",
        PostgresOptions::new().connect_timeout(std::time::Duration::from_secs(2)),
    )
    .await
    .unwrap_err();
    let inner = pg_error(&err);
    assert!(matches!(inner, PostgresError::Connect { .. }), "{inner:?}");
    let message = err.to_string();
    assert!(message.contains("127.0.0.1:1"), "{message}");
    assert!(message.contains("database `nothing`"), "{message}");
    assert!(!message.contains("secret"), "{message}");
}

#[tokio::test]
async fn a_bad_url_or_schema_name_is_a_clear_error() {
    let err = PostgresSaver::connect("postgres://me:hunter2@host:notaport/db")
        .await
        .unwrap_err();
    let inner = pg_error(&err);
    assert!(
        matches!(inner, PostgresError::InvalidUrl { .. }),
        "{inner:?}"
    );
    let message = inner.to_string();
    assert!(message.contains("postgres://me:***@host"), "{message}");
    assert!(!message.contains("hunter2"), "{message}");

    let err = PostgresSaver::connect_with(
        "postgres://me@localhost/db",
        PostgresOptions::new().schema("robert'); DROP TABLE students;--"),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(pg_error(&err), PostgresError::InvalidSchema { .. }),
        "{err:?}"
    );
}

#[test]
fn outside_a_tokio_runtime_it_says_so() {
    let err = futures::executor::block_on(PostgresSaver::connect("postgres://me@localhost/db"))
        .unwrap_err();
    assert!(
        matches!(pg_error(&err), PostgresError::NoRuntime),
        "{err:?}"
    );
}

#[tokio::test]
async fn an_application_schema_keeps_its_own_tables() {
    let url = server!();
    let schema = servers::fresh_schema("app");
    let conn = raw(&url, None).await;
    conn.batch_execute(&format!(
        "CREATE SCHEMA {schema}; CREATE TABLE {schema}.orders (id INTEGER PRIMARY KEY); INSERT INTO {schema}.orders VALUES (7);"
    ))
    .await
    .unwrap();
    let saver = in_schema(&url, &schema).await;
    let configs = chain(&saver, "t", 1).await;
    assert!(saver.get_tuple(&configs[0]).await.unwrap().is_some());
    let id: i32 = conn
        .query_one(&format!("SELECT id FROM {schema}.orders"), &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(id, 7);
    let version: String = conn
        .query_one(
            &format!("SELECT value FROM {schema}.stategraph_meta WHERE key = 'schema_version'"),
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(version, TABLE_VERSION.to_string());
    drop_schema(&url, &schema).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn savers_connecting_at_once_migrate_a_new_schema_once() {
    let url = server!();
    let schema = servers::fresh_schema("race");
    let tasks: Vec<_> = (0..6)
        .map(|i| {
            let (url, schema) = (url.clone(), schema.clone());
            tokio::spawn(async move {
                let saver = in_schema(&url, &schema).await;
                chain(&saver, &format!("writer-{i}"), 5).await;
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let saver = in_schema(&url, &schema).await;
    for i in 0..6 {
        let all = saver
            .list(
                &CheckpointConfig::thread(format!("writer-{i}")),
                &ListOptions::new(),
            )
            .await
            .unwrap();
        assert_eq!(all.len(), 5);
    }
    drop_schema(&url, &schema).await;
}

#[tokio::test]
async fn a_dropped_thread_lock_is_released_even_while_its_runtime_is_blocked() {
    let url = server!();
    let saver = PostgresSaver::connect(&url).await.unwrap();
    let thread = format!("blocked-{}", servers::fresh_schema("t"));
    let lock = saver
        .lock_thread(&thread, std::time::Duration::ZERO)
        .await
        .unwrap();
    drop(lock);
    // This runtime's only thread now blocks on another process-like client: nothing
    // here runs until it returns, so the release cannot wait for this runtime.
    let other = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let saver = PostgresSaver::connect(&url).await.unwrap();
            saver
                .lock_thread(&thread, std::time::Duration::from_secs(3))
                .await
                .map(drop)
        })
    })
    .join()
    .unwrap();
    assert!(other.is_ok(), "{other:?}");
}

#[tokio::test]
async fn a_thread_held_by_another_saver_is_busy_until_released() {
    let url = server!();
    let (a, b) = (
        PostgresSaver::connect(&url).await.unwrap(),
        PostgresSaver::connect(&url).await.unwrap(),
    );
    let thread = format!("held-{}", servers::fresh_schema("t"));
    let held = a
        .lock_thread(&thread, std::time::Duration::ZERO)
        .await
        .unwrap();
    let err = b
        .lock_thread(&thread, std::time::Duration::from_millis(100))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, CheckpointError::ThreadBusy { thread_id, .. } if *thread_id == thread),
        "{err:?}"
    );
    // The same thread id in another schema is another thread.
    let other_schema = servers::fresh_schema("locks");
    let c = in_schema(&url, &other_schema).await;
    drop(
        c.lock_thread(&thread, std::time::Duration::ZERO)
            .await
            .unwrap(),
    );
    drop(held);
    drop(
        b.lock_thread(&thread, std::time::Duration::from_secs(3))
            .await
            .unwrap(),
    );
    drop_schema(&url, &other_schema).await;
}
