//! Thread locks on PostgreSQL take a bounded number of connections: a saver's runs all
//! hold their advisory locks on one lock session, so 50 threads running at once hold
//! at most `pool_size` + 1 connections (measured in `pg_stat_activity` by the saver's
//! `application_name`). And a lock session that dies under a running thread does not
//! let two writers in: the run's next save is refused with `LockLost`.
//!
//! Needs a server: set `STATEGRAPH_POSTGRES_URL`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use stategraph::checkpoint::{CheckpointError, CheckpointSaver};
use stategraph::prelude::*;
use stategraph_postgres::{PostgresError, PostgresOptions, PostgresSaver};
use stategraph_tests::servers;

const THREADS: usize = 50;
const POOL: usize = 4;

#[derive(GraphState, Clone, Debug, Default)]
struct Log {
    #[reducer(append)]
    lines: Vec<String>,
}

/// Long enough that every thread's run is under way at once.
#[node]
async fn slow(_s: &Log) -> LogUpdate {
    tokio::time::sleep(Duration::from_millis(1500)).await;
    Log::update().lines(["done".to_string()])
}

fn graph(saver: PostgresSaver) -> CompiledGraph<Log> {
    StateGraph::<Log>::new()
        .add_node(slow)
        .add_edge(START, slow)
        .compile_with(CompileOptions::new().checkpointer(saver))
        .unwrap()
}

/// A plain connection for watching the server.
async fn monitor(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
}

/// Sessions named `app`, and the advisory locks they hold.
async fn sessions_and_locks(client: &tokio_postgres::Client, app: &str) -> (i64, i64) {
    let row = client
        .query_one(
            "SELECT (SELECT count(*) FROM pg_stat_activity WHERE application_name = $1),
                    (SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
                      WHERE a.application_name = $1 AND l.locktype = 'advisory' AND l.granted)",
            &[&app],
        )
        .await
        .unwrap();
    (row.get(0), row.get(1))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_threads_hold_at_most_pool_size_plus_one_connections() {
    let Some(url) = servers::postgres_url(module_path!()) else {
        return;
    };
    let app = servers::fresh_schema("bound");
    let schema = servers::fresh_schema("bound");
    let saver = PostgresSaver::connect_with(
        &servers::with_params(&url, &[("application_name", &app)]),
        PostgresOptions::new()
            .pool_size(POOL)
            .schema(schema.clone()),
    )
    .await
    .unwrap();
    let graph = Arc::new(graph(saver));

    let watcher = monitor(&url).await;
    let running = Arc::new(AtomicBool::new(true));
    let watch = {
        let running = running.clone();
        let app = app.clone();
        tokio::spawn(async move {
            let (mut most_sessions, mut most_locks) = (0, 0);
            while running.load(Ordering::SeqCst) {
                let (sessions, locks) = sessions_and_locks(&watcher, &app).await;
                most_sessions = most_sessions.max(sessions);
                most_locks = most_locks.max(locks);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            (most_sessions, most_locks)
        })
    };

    let runs: Vec<_> = (0..THREADS)
        .map(|i| {
            let graph = graph.clone();
            tokio::spawn(async move {
                graph
                    .invoke(Log::update(), &RunConfig::new().thread(format!("t{i:02}")))
                    .await
            })
        })
        .collect();
    for run in runs {
        let out = run.await.unwrap().unwrap();
        assert_eq!(out.values.lines, ["done"]);
    }
    running.store(false, Ordering::SeqCst);
    let (most_sessions, most_locks) = watch.await.unwrap();
    eprintln!(
        "{THREADS} threads: at most {most_sessions} connections (bound {}), {most_locks} thread locks held at once",
        POOL + 1
    );
    assert!(
        most_sessions <= (POOL + 1) as i64,
        "{most_sessions} connections for {THREADS} threads, more than pool_size + 1 = {}",
        POOL + 1
    );
    // The runs did overlap: many locks were held at once, on those few connections.
    assert!(
        most_locks > (POOL + 1) as i64,
        "only {most_locks} locks were ever held at once"
    );

    drop(graph);
    tokio::task::spawn_blocking(move || servers::drop_schema(&url, &schema))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_lock_session_dies_cannot_save_and_the_thread_runs_again_after() {
    let Some(url) = servers::postgres_url(module_path!()) else {
        return;
    };
    let app = servers::fresh_schema("lost");
    let schema = servers::fresh_schema("lost");
    let options = PostgresOptions::new().schema(schema.clone());
    let saver = PostgresSaver::connect_with(
        &servers::with_params(&url, &[("application_name", &app)]),
        options.clone(),
    )
    .await
    .unwrap();
    let graph = Arc::new(graph(saver));
    let run = {
        let graph = graph.clone();
        tokio::spawn(async move {
            graph
                .invoke(Log::update(), &RunConfig::new().thread("shared"))
                .await
        })
    };

    // The lock session: the one session of the saver holding an advisory lock.
    let watcher = monitor(&url).await;
    let started = Instant::now();
    let pid: i32 = loop {
        let rows = watcher
            .query(
                "SELECT l.pid FROM pg_locks l JOIN pg_stat_activity a USING (pid)
                 WHERE a.application_name = $1 AND l.locktype = 'advisory' AND l.granted",
                &[&app],
            )
            .await
            .unwrap();
        if let Some(row) = rows.first() {
            break row.get(0);
        }
        assert!(started.elapsed() < Duration::from_secs(10), "no lock taken");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    watcher
        .execute("SELECT pg_terminate_backend($1)", &[&pid])
        .await
        .unwrap();

    // Another process can now take the thread while the first run is still going.
    let other = PostgresSaver::connect_with(&url, options).await.unwrap();
    let taken = other
        .lock_thread("shared", Duration::from_secs(5))
        .await
        .unwrap();

    let err = run.await.unwrap().unwrap_err();
    let RunError::Checkpoint(CheckpointError::Storage { source, .. }) = &err else {
        panic!("expected a storage error, got {err:?}");
    };
    match source.downcast_ref::<PostgresError>() {
        Some(PostgresError::LockLost { thread_id, .. }) => assert_eq!(thread_id, "shared"),
        other => panic!("expected a lost lock, got {other:?} ({err})"),
    }
    let message = source.to_string();
    assert!(
        message.contains("thread `shared` was lost") && message.contains("run the thread again"),
        "{message}"
    );

    // Once the other holder lets go, the same saver opens a new lock session and the
    // thread runs again.
    drop(taken);
    let out = graph
        .invoke(Log::update(), &RunConfig::new().thread("shared"))
        .await
        .unwrap();
    assert_eq!(out.values.lines, ["done"]);

    drop(graph);
    drop(other);
    tokio::task::spawn_blocking(move || servers::drop_schema(&url, &schema))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_url_takes_the_lock_session_elsewhere() {
    let Some(url) = servers::postgres_url(module_path!()) else {
        return;
    };
    let (main_app, lock_app) = (servers::fresh_schema("main"), servers::fresh_schema("lock"));
    let schema = servers::fresh_schema("lock_url");
    let saver = PostgresSaver::connect_with(
        &servers::with_params(&url, &[("application_name", &main_app)]),
        PostgresOptions::new()
            .schema(schema.clone())
            .lock_url(servers::with_params(
                &url,
                &[("application_name", &lock_app)],
            )),
    )
    .await
    .unwrap();
    let graph = Arc::new(graph(saver));
    let run = {
        let graph = graph.clone();
        tokio::spawn(async move {
            graph
                .invoke(Log::update(), &RunConfig::new().thread("elsewhere"))
                .await
        })
    };
    let watcher = monitor(&url).await;
    let started = Instant::now();
    loop {
        let (_, on_lock_url) = sessions_and_locks(&watcher, &lock_app).await;
        if on_lock_url == 1 {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "no lock taken");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (main_sessions, on_main) = sessions_and_locks(&watcher, &main_app).await;
    assert_eq!(on_main, 0, "a lock was taken on the main URL's sessions");
    assert!(main_sessions >= 1);
    assert_eq!(run.await.unwrap().unwrap().values.lines, ["done"]);

    drop(graph);
    tokio::task::spawn_blocking(move || servers::drop_schema(&url, &schema))
        .await
        .unwrap();
}

/// A current-thread runtime with its drivers.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn locks_on_one_session_still_exclude_each_other_and_outlive_the_runtime_that_took_them() {
    let Some(url) = servers::postgres_url(module_path!()) else {
        return;
    };
    let schema = servers::fresh_schema("one_session");
    let options = PostgresOptions::new().schema(schema.clone());
    let first = runtime();
    let (saver, other, held) = first.block_on(async {
        let saver = PostgresSaver::connect_with(&url, options.clone())
            .await
            .unwrap();
        let other = PostgresSaver::connect_with(&url, options).await.unwrap();
        let held = saver
            .lock_thread("mine", Duration::from_secs(1))
            .await
            .unwrap();
        // Advisory locks are re-entrant within a session: the saver itself (and its
        // clones, on the same lock session) must still see the thread as busy.
        for again in [saver.clone(), saver.clone()] {
            let err = again
                .lock_thread("mine", Duration::from_millis(100))
                .await
                .unwrap_err();
            assert!(matches!(err, CheckpointError::ThreadBusy { .. }), "{err:?}");
        }
        (saver, other, held)
    });
    // The runtime that took the lock is gone; the lock session is not.
    drop(first);
    runtime().block_on(async {
        let err = other
            .lock_thread("mine", Duration::from_millis(100))
            .await
            .unwrap_err();
        assert!(matches!(err, CheckpointError::ThreadBusy { .. }), "{err:?}");
        drop(held);
        let mine = saver
            .lock_thread("mine", Duration::from_secs(5))
            .await
            .unwrap();
        drop(mine);
        let theirs = other
            .lock_thread("mine", Duration::from_secs(5))
            .await
            .unwrap();
        drop(theirs);
    });
    drop((saver, other));
    servers::drop_schema(&url, &schema);
}

#[tokio::test]
async fn a_lock_request_given_up_on_does_not_leave_the_thread_locked() {
    let Some(url) = servers::postgres_url(module_path!()) else {
        return;
    };
    let schema = servers::fresh_schema("given_up");
    let options = PostgresOptions::new().schema(schema.clone());
    let saver = PostgresSaver::connect_with(&url, options.clone())
        .await
        .unwrap();
    let other = PostgresSaver::connect_with(&url, options).await.unwrap();
    // Open the lock session first, so each request below is answered quickly, but
    // not before its caller gives up.
    drop(
        saver
            .lock_thread("warm", Duration::from_secs(5))
            .await
            .unwrap(),
    );
    let mut cancelled = 0;
    for i in 0..20 {
        let thread = format!("t{i}");
        // Given up on after its first poll has sent it, before any answer can be
        // read: the task yields once, then drops the request. (A timeout of a few
        // microseconds raced the loopback answer and sometimes lost every time.)
        let asked = tokio::select! {
            biased;
            () = tokio::task::yield_now() => None,
            answer = saver.lock_thread(&thread, Duration::from_secs(5)) => Some(answer),
        };
        if asked.is_none() {
            cancelled += 1;
        }
        drop(asked);
        let theirs = other
            .lock_thread(&thread, Duration::from_secs(2))
            .await
            .unwrap_or_else(|e| panic!("{thread} was left locked: {e}"));
        drop(theirs);
    }
    assert!(
        cancelled > 0,
        "no request was given up on before its answer"
    );
    drop((saver, other));
    tokio::task::spawn_blocking(move || servers::drop_schema(&url, &schema))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_lock_request_dropped_after_its_answer_came_does_not_leave_the_thread_locked() {
    let Some(url) = servers::postgres_url(module_path!()) else {
        return;
    };
    let schema = servers::fresh_schema("answered_dropped");
    let options = PostgresOptions::new().schema(schema.clone());
    let saver = PostgresSaver::connect_with(&url, options.clone())
        .await
        .unwrap();
    let other = PostgresSaver::connect_with(&url, options).await.unwrap();
    let mut answered_at_once = 0;
    for i in 0..5 {
        let thread = format!("t{i}");
        // Polled once (the request goes out), then left alone while the lock is
        // taken and the answer waits unread, then dropped: a run cancelled just as
        // its thread's lock was granted.
        let mut asked = Box::pin(saver.lock_thread(&thread, Duration::from_secs(5)));
        // The lock service runs on a thread of its own: on a loaded machine it may
        // answer before this first poll returns; then the lock is dropped held,
        // which must free the thread as well.
        if let std::task::Poll::Ready(answer) = futures::poll!(asked.as_mut()) {
            drop(answer.unwrap_or_else(|e| panic!("{thread}: {e}")));
            answered_at_once += 1;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        drop(asked);
        let theirs = other
            .lock_thread(&thread, Duration::from_secs(2))
            .await
            .unwrap_or_else(|e| panic!("{thread} was left locked: {e}"));
        drop(theirs);
    }
    assert!(
        answered_at_once < 5,
        "every answer came before the first poll returned: the dropped-unread case never ran"
    );
    drop((saver, other));
    tokio::task::spawn_blocking(move || servers::drop_schema(&url, &schema))
        .await
        .unwrap();
}
