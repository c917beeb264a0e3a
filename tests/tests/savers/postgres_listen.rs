//! `connect_pool` and `connect_listener`: other code on the saver's database
//! connects as the saver does, and a listener receives `NOTIFY`s in order.

use std::time::Duration;

use stategraph::checkpoint::CheckpointError;
use stategraph_postgres::{PostgresError, PostgresOptions, connect_listener, connect_pool};
use stategraph_tests::servers;

#[tokio::test]
async fn a_listener_receives_what_a_pool_connection_notifies() {
    let Some(url) = servers::postgres_url("a_listener_receives_what_a_pool_connection_notifies")
    else {
        return;
    };
    let options = PostgresOptions::new();
    let pool = connect_pool(&url, &options).await.expect("a pool");
    let mut listener = connect_listener(&url, &options).await.expect("a listener");
    let channel = format!(
        "sg_listen_{}",
        stategraph::checkpoint::new_checkpoint_id().to_lowercase()
    );
    listener
        .client()
        .batch_execute(&format!("LISTEN {channel}"))
        .await
        .expect("LISTEN");
    let client = pool.get().await.expect("a pooled connection");
    for payload in ["one", "two", "three"] {
        client
            .execute("SELECT pg_notify($1, $2)", &[&channel, &payload])
            .await
            .expect("NOTIFY");
    }
    let mut got = Vec::new();
    while got.len() < 3 {
        let n = tokio::time::timeout(Duration::from_secs(5), listener.recv())
            .await
            .expect("a notification within 5 s")
            .expect("the connection is open");
        assert_eq!(n.channel(), channel);
        got.push(n.payload().to_string());
    }
    assert_eq!(got, ["one", "two", "three"]);
    assert!(!listener.is_closed());

    // The listener's connection ending ends its notifications.
    let pid: i32 = listener
        .client()
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .expect("its pid")
        .get(0);
    client
        .execute("SELECT pg_terminate_backend($1)", &[&pid])
        .await
        .expect("terminate the listener's backend");
    let end = tokio::time::timeout(Duration::from_secs(5), listener.recv())
        .await
        .expect("the end is noticed within 5 s");
    assert!(end.is_none(), "a notification after the connection ended");
}

#[tokio::test]
async fn a_bad_url_or_ca_fails_as_the_saver_fails() {
    let err = connect_listener("postgres://u@h:notaport/db", &PostgresOptions::new())
        .await
        .expect_err("a bad URL");
    let CheckpointError::Storage { source, .. } = &err else {
        panic!("not a storage error: {err:?}");
    };
    assert!(
        matches!(
            source.downcast_ref::<PostgresError>(),
            Some(PostgresError::InvalidUrl { .. })
        ),
        "{err:?}"
    );
    let err = connect_pool(
        "postgres://u@127.0.0.1:5432/db?sslmode=verify-full",
        &PostgresOptions::new().ca_file("/nonexistent/ca.pem"),
    )
    .await
    .expect_err("a missing CA");
    let CheckpointError::Storage { source, .. } = &err else {
        panic!("not a storage error: {err:?}");
    };
    assert!(
        matches!(
            source.downcast_ref::<PostgresError>(),
            Some(PostgresError::CaFile { .. })
        ),
        "{err:?}"
    );
}
