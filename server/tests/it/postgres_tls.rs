//! The server on a TLS URL (`sslmode=verify-full`, the CA in `sslrootcert`): it
//! creates a thread and runs a run, and every connection it opened — the run
//! queue's pool, its `LISTEN` connection, the saver's and the store's — is
//! encrypted. Needs a server with `ssl=on` and its CA (`STATEGRAPH_POSTGRES_TLS_CA`);
//! skips visibly without them.

use crate::common;
use crate::pg;

use common::Harness;
use serde_json::json;

/// How many sessions named `app` use TLS, and how many there are.
async fn tls_sessions(url: &str, app: &str) -> (i64, i64) {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("a plain connection for the check");
    let driver = tokio::spawn(connection);
    let row = client
        .query_one(
            "SELECT count(*) FILTER (WHERE s.ssl), count(*)
             FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid)
             WHERE a.application_name = $1",
            &[&app],
        )
        .await
        .expect("the sessions");
    drop(client);
    let _ = driver.await;
    (row.get(0), row.get(1))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_runs_over_verified_tls() {
    let Some((url, ca)) = pg::postgres_tls("the_server_runs_over_verified_tls") else {
        return;
    };
    let schema = pg::fresh_schema("sg_srv_tls");
    let app = schema.clone();
    let sep = if url.contains('?') { '&' } else { '?' };
    let tls = pg::tls_url(&format!("{url}{sep}application_name={app}"), &ca);
    let h = Harness::bind(pg::server(&tls, &schema)).await;
    let t = h.thread().await;
    let (status, out) = h
        .post(
            &format!("/threads/{t}/runs/wait"),
            json!({ "assistant_id": "job", "input": { "delay_ms": 1 } }),
        )
        .await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(out["log"], json!(["first", "second"]), "{out}");
    let (_, run) = h.get(&format!("/threads/{t}/runs")).await;
    assert_eq!(run[0]["status"], "success", "{run}");

    let (encrypted, all) = tls_sessions(&url, &app).await;
    assert!(
        all >= 2,
        "the server's sessions are not found by name: {all}"
    );
    assert_eq!(encrypted, all, "every session of the server uses TLS");

    h.running.shutdown().await.expect("a clean shutdown");
    pg::drop_schema(&url, &schema).await;
}
