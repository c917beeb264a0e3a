//! A thread's fence on PostgreSQL: taking a thread's lock writes a new fence in
//! `stategraph_thread_locks`, and every save of a held thread checks it in the save's
//! transaction. A holder whose fence was replaced (another process took the thread
//! after its lock session was lost) cannot write; a process taking the thread waits for
//! a save already past its check; letting go of a thread deletes its fence, and
//! deleting a thread keeps the fence of a holder.
//!
//! Needs a server: set `STATEGRAPH_POSTGRES_URL`.

use std::time::{Duration, Instant};

use stategraph::checkpoint::{
    CheckpointConfig, CheckpointError, CheckpointMetadata, CheckpointSaver, CheckpointSource,
};
use stategraph_postgres::{PostgresError, PostgresOptions, PostgresSaver};
use stategraph_tests::{conformance, servers};

/// A plain connection with `schema` as its search path.
async fn raw(url: &str, schema: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .batch_execute(&format!("SET search_path TO {schema}"))
        .await
        .unwrap();
    client
}

async fn fences(client: &tokio_postgres::Client, thread: &str) -> Vec<String> {
    client
        .query(
            "SELECT fence::text FROM stategraph_thread_locks WHERE thread_id = $1",
            &[&thread],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// A saver in a fresh schema named after `prefix`, and a plain connection to it.
async fn fresh(prefix: &str) -> Option<(String, String, PostgresSaver, tokio_postgres::Client)> {
    let url = servers::postgres_url(module_path!())?;
    let schema = servers::fresh_schema(prefix);
    let saver = PostgresSaver::connect_with(&url, PostgresOptions::new().schema(&schema))
        .await
        .unwrap();
    let db = raw(&url, &schema).await;
    Some((url, schema, saver, db))
}

/// Puts checkpoint `version` after `config`.
async fn put(
    saver: &PostgresSaver,
    config: &CheckpointConfig,
    version: u64,
) -> Result<CheckpointConfig, CheckpointError> {
    saver
        .put(
            config,
            conformance::checkpoint(version),
            CheckpointMetadata::new(CheckpointSource::Loop, version as i64),
        )
        .await
}

fn lost_thread(err: &CheckpointError) -> Option<String> {
    let CheckpointError::Storage { source, .. } = err else {
        return None;
    };
    match source.downcast_ref::<PostgresError>() {
        Some(PostgresError::LockLost { thread_id, .. }) => Some(thread_id.clone()),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replaced_fence_refuses_the_old_holders_saves() {
    let Some((url, schema, saver, db)) = fresh("fence").await else {
        return;
    };

    // Each lock writes a new fence.
    let lock = saver
        .lock_thread("t", Duration::from_secs(5))
        .await
        .unwrap();
    let first = fences(&db, "t").await;
    assert_eq!(first.len(), 1);
    let stored = put(&saver, &CheckpointConfig::thread("t"), 1)
        .await
        .unwrap();
    drop(lock);
    let lock = saver
        .lock_thread("t", Duration::from_secs(5))
        .await
        .unwrap();
    let second = fences(&db, "t").await;
    assert_eq!(second.len(), 1);
    assert_ne!(first, second, "taking the lock again wrote no new fence");
    let stored = put(&saver, &stored, 2).await.unwrap();

    // Another process takes the thread (as it may once this lock session is lost):
    // while its new fence is not committed, this holder's save waits for it; then the
    // save is refused, storing nothing.
    let taker = raw(&url, &schema).await;
    taker
        .batch_execute(
            "BEGIN; UPDATE stategraph_thread_locks SET fence = gen_random_uuid()
             WHERE thread_id = 't'",
        )
        .await
        .unwrap();
    let saving = {
        let (saver, stored) = (saver.clone(), stored.clone());
        tokio::spawn(async move { put(&saver, &stored, 3).await })
    };
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(
        !saving.is_finished(),
        "the save did not wait for the new fence"
    );
    taker.batch_execute("COMMIT").await.unwrap();
    let err = saving.await.unwrap().unwrap_err();
    assert_eq!(lost_thread(&err).as_deref(), Some("t"), "{err}");
    let message = err.to_string();
    assert!(
        message.contains("another process has taken the thread"),
        "{message}"
    );
    let latest = saver
        .get_tuple(&CheckpointConfig::thread("t"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(latest.config.checkpoint_id, stored.checkpoint_id);
    // The lock is lost for good: later saves are refused without asking the server.
    let err = put(&saver, &stored, 4).await.unwrap_err();
    assert_eq!(lost_thread(&err).as_deref(), Some("t"), "{err}");
    drop(lock);

    drop(saver);
    tokio::task::spawn_blocking(move || servers::drop_schema(&url, &schema))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn taking_a_thread_waits_for_a_save_past_its_check() {
    let Some(url) = servers::postgres_url(module_path!()) else {
        return;
    };
    let schema = servers::fresh_schema("fence_wait");
    let options = PostgresOptions::new().schema(&schema);
    let new = PostgresSaver::connect_with(&url, options).await.unwrap();

    // The old holder's lock session has ended (so its advisory lock is free), but its
    // fence is there, and a save of it that has passed its check holds the fence's row
    // until it commits: the new holder's lock waits for it.
    let save = raw(&url, &schema).await;
    save.batch_execute(
        "INSERT INTO stategraph_thread_locks VALUES ('t', gen_random_uuid());
         BEGIN; SELECT 1 FROM stategraph_thread_locks WHERE thread_id = 't' FOR SHARE",
    )
    .await
    .unwrap();
    let old = fences(&save, "t").await;
    let taking = tokio::spawn(async move {
        let lock = new.lock_thread("t", Duration::from_secs(10)).await;
        (lock, Instant::now(), new)
    });
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(!taking.is_finished(), "the lock did not wait for the save");
    let committed = Instant::now();
    save.batch_execute("COMMIT").await.unwrap();
    let (lock, at, new) = taking.await.unwrap();
    let lock = lock.unwrap();
    assert!(at >= committed);
    let now = fences(&save, "t").await;
    assert_eq!(now.len(), 1);
    assert_ne!(now, old, "the new lock wrote no fence");
    drop(lock);

    drop(new);
    tokio::task::spawn_blocking(move || servers::drop_schema(&url, &schema))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_fence_lives_while_its_thread_is_held() {
    let Some((url, schema, saver, db)) = fresh("fence_delete").await else {
        return;
    };

    let lock = saver
        .lock_thread("t", Duration::from_secs(5))
        .await
        .unwrap();
    put(&saver, &CheckpointConfig::thread("t"), 1)
        .await
        .unwrap();
    saver.delete_thread("t").await.unwrap();
    assert!(
        saver
            .get_tuple(&CheckpointConfig::thread("t"))
            .await
            .unwrap()
            .is_none()
    );
    // The holder still writes the thread.
    assert_eq!(fences(&db, "t").await.len(), 1);
    put(&saver, &CheckpointConfig::thread("t"), 2)
        .await
        .unwrap();
    drop(lock);

    // Letting go of the thread deletes its fence (the unlock is sent on the lock
    // session, so it may come a moment later).
    let started = Instant::now();
    while !fences(&db, "t").await.is_empty() {
        assert!(started.elapsed() < Duration::from_secs(5), "fence kept");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A fence left by a holder that died (its lock session gone, so nobody holds the
    // thread) is deleted with the thread.
    db.execute(
        "INSERT INTO stategraph_thread_locks VALUES ('t', gen_random_uuid())",
        &[],
    )
    .await
    .unwrap();
    saver.delete_thread("t").await.unwrap();
    assert!(fences(&db, "t").await.is_empty());

    drop(saver);
    tokio::task::spawn_blocking(move || servers::drop_schema(&url, &schema))
        .await
        .unwrap();
}
