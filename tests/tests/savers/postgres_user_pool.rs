//! A saver on a pool the user built (`PostgresSaver::from_pool`, with the re-exported
//! `deadpool_postgres`): it creates its tables in the pool's schema, runs threads
//! within the pool's `max_size` connections (its lock session is one of them), and its
//! locks exclude a saver connected by URL to the same tables.
//!
//! Needs a server: set `STATEGRAPH_POSTGRES_URL`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use stategraph::checkpoint::{CheckpointError, CheckpointSaver};
use stategraph::prelude::*;
use stategraph_postgres::deadpool_postgres::{self, Manager, Pool};
use stategraph_postgres::{PostgresError, PostgresOptions, PostgresSaver};
use stategraph_tests::servers;

const MAX_SIZE: usize = 3;

#[derive(GraphState, Clone, Debug, Default)]
struct Log {
    #[reducer(append)]
    lines: Vec<String>,
}

#[node]
async fn slow(_s: &Log) -> LogUpdate {
    tokio::time::sleep(Duration::from_millis(300)).await;
    Log::update().lines(["done".to_string()])
}

/// A pool of `max_size` connections named `app`, working in `schema`.
fn pool(url: &str, app: &str, schema: &str, max_size: usize) -> Pool {
    let mut pg: deadpool_postgres::tokio_postgres::Config = url.parse().unwrap();
    pg.application_name(app)
        .options(format!("-c search_path={schema}"));
    let manager = Manager::new(pg, deadpool_postgres::tokio_postgres::NoTls);
    Pool::builder(manager).max_size(max_size).build().unwrap()
}

async fn monitor(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
}

fn postgres_error(err: &CheckpointError) -> &PostgresError {
    match err {
        CheckpointError::Storage { source, .. } => source
            .downcast_ref::<PostgresError>()
            .unwrap_or_else(|| panic!("not a PostgresError: {err:?}")),
        other => panic!("expected a storage error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_saver_on_a_users_pool_migrates_runs_and_stays_within_the_pool() {
    let Some(url) = servers::postgres_url(module_path!()) else {
        return;
    };
    let app = servers::fresh_schema("user_pool");
    let schema = servers::fresh_schema("user_pool");
    let watcher = monitor(&url).await;
    watcher
        .batch_execute(&format!("CREATE SCHEMA \"{schema}\""))
        .await
        .unwrap();

    let users = pool(&url, &app, &schema, MAX_SIZE);
    let saver = PostgresSaver::from_pool(users.clone(), PostgresOptions::new())
        .await
        .unwrap();
    let tables: i64 = watcher
        .query_one(
            "SELECT count(*) FROM information_schema.tables
             WHERE table_schema = $1 AND table_name LIKE 'stategraph\\_%'",
            &[&schema],
        )
        .await
        .unwrap()
        .get(0);
    assert!(tables >= 3, "{tables} saver tables in the pool's schema");

    let graph = Arc::new(
        StateGraph::<Log>::new()
            .add_node(slow)
            .add_edge(START, slow)
            .compile_with(CompileOptions::new().checkpointer(saver.clone()))
            .unwrap(),
    );
    let running = Arc::new(AtomicBool::new(true));
    let watch = {
        let (running, app) = (running.clone(), app.clone());
        tokio::spawn(async move {
            let mut most = 0i64;
            while running.load(Ordering::SeqCst) {
                let n: i64 = watcher
                    .query_one(
                        "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
                        &[&app],
                    )
                    .await
                    .unwrap()
                    .get(0);
                most = most.max(n);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            most
        })
    };
    let runs: Vec<_> = (0..10)
        .map(|i| {
            let graph = graph.clone();
            tokio::spawn(async move {
                graph
                    .invoke(Log::update(), &RunConfig::new().thread(format!("t{i}")))
                    .await
            })
        })
        .collect();
    for run in runs {
        assert_eq!(run.await.unwrap().unwrap().values.lines, ["done"]);
    }
    running.store(false, Ordering::SeqCst);
    let most = watch.await.unwrap();
    assert!(
        most <= MAX_SIZE as i64,
        "{most} connections on a pool of {MAX_SIZE}"
    );

    // Its locks and a URL saver's on the same tables exclude each other.
    let by_url = PostgresSaver::connect_with(&url, PostgresOptions::new().schema(schema.clone()))
        .await
        .unwrap();
    let held = saver
        .lock_thread("t0", Duration::from_secs(1))
        .await
        .unwrap();
    let err = by_url
        .lock_thread("t0", Duration::from_millis(100))
        .await
        .unwrap_err();
    assert!(matches!(err, CheckpointError::ThreadBusy { .. }), "{err:?}");
    drop(held);
    let again = by_url
        .lock_thread("t0", Duration::from_secs(5))
        .await
        .unwrap();
    drop(again);
    // The URL saver sees the pool saver's threads.
    assert_eq!(by_url.list_threads().await.unwrap().len(), 10);

    drop((graph, saver, by_url));
    // The lock session goes back to the pool as it came: holding no lock, its commits
    // waiting for the disk (the saver writes fences without waiting).
    let started = std::time::Instant::now();
    while users.status().available < users.status().size {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "lock session kept"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut all = Vec::new();
    for _ in 0..users.status().size {
        let c = users.get().await.unwrap();
        let row = c
            .query_one(
                "SELECT current_setting('synchronous_commit'),
                        (SELECT count(*) FROM pg_locks
                         WHERE pid = pg_backend_pid() AND locktype = 'advisory')",
                &[],
            )
            .await
            .unwrap();
        assert_eq!(row.get::<_, String>(0), "on");
        assert_eq!(row.get::<_, i64>(1), 0);
        all.push(c);
    }
    drop((all, users));
    tokio::task::spawn_blocking(move || servers::drop_schema(&url, &schema))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_pool_too_small_or_a_schema_in_the_options_is_refused() {
    let Some(url) = servers::postgres_url(module_path!()) else {
        return;
    };
    let err = PostgresSaver::from_pool(pool(&url, "tiny", "public", 1), PostgresOptions::new())
        .await
        .unwrap_err();
    match postgres_error(&err) {
        PostgresError::PoolTooSmall { max_size } => assert_eq!(*max_size, 1),
        other => panic!("expected a pool too small, got {other:?}"),
    }
    let err = PostgresSaver::from_pool(
        pool(&url, "schema", "public", 2),
        PostgresOptions::new().schema("elsewhere"),
    )
    .await
    .unwrap_err();
    match postgres_error(&err) {
        PostgresError::SchemaWithPool { name } => assert_eq!(name, "elsewhere"),
        other => panic!("expected a schema refusal, got {other:?}"),
    }
    assert!(postgres_error(&err).to_string().contains("search_path"));
}
