//! Servers on the test PostgreSQL database (`STATEGRAPH_POSTGRES_URL`, over TLS with
//! `sslmode=verify-full` when `STATEGRAPH_POSTGRES_TLS_CA` names the CA), each test
//! in a schema of its own, serving the graphs of `common` (which the test file
//! declares too: `mod common; mod pg;`).
//!
//! Without the URL the tests skip with a notice, except under `CI=true`, where they
//! fail: CI must run them.

#![allow(dead_code)]

use std::time::Duration;

use stategraph_postgres::PostgresOptions;
use stategraph_server::Server;

const URL_VAR: &str = "STATEGRAPH_POSTGRES_URL";
const CA_VAR: &str = "STATEGRAPH_POSTGRES_TLS_CA";

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The URL to test against (with TLS parameters when a CA is given), or `None`
/// after a visible skip notice.
///
/// # Panics
/// Under `CI=true` without a URL.
pub fn postgres_url(test: &str) -> Option<String> {
    let url = stategraph_tests::servers::postgres_url(test)?;
    Some(match var(CA_VAR) {
        Some(ca) => tls_url(&url, &ca),
        None => url,
    })
}

/// The plain URL and the CA file of a server with TLS on, or `None` after a visible
/// skip notice when either is missing.
///
/// # Panics
/// Under `CI=true` when either is missing (CI's server has TLS on).
pub fn postgres_tls(test: &str) -> Option<(String, String)> {
    match (var(URL_VAR), var(CA_VAR)) {
        (Some(url), Some(ca)) => Some((url, ca)),
        _ => {
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!("{test}: {URL_VAR} and {CA_VAR} must both be set under CI=true");
            }
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "notice: {test} skipped: set {URL_VAR} to a server with ssl=on and {CA_VAR} to the PEM file of the CA that signed its certificate"
            );
            None
        }
    }
}

/// `url` with `sslmode=verify-full` and the CA file.
pub fn tls_url(url: &str, ca: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}sslmode=verify-full&sslrootcert={ca}")
}

pub use stategraph_tests::servers::fresh_schema;

/// Drops `schema` with everything in it.
pub async fn drop_schema(url: &str, schema: &str) {
    let (client, connection) = tokio_postgres::connect(plain(url), tokio_postgres::NoTls)
        .await
        .expect("connect to drop a test schema");
    let driver = tokio::spawn(connection);
    client
        .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
        .await
        .expect("drop a test schema");
    drop(client);
    let _ = driver.await;
}

/// `url` without the TLS parameters this module adds (for the plain cleanup
/// connection).
pub fn plain(url: &str) -> &str {
    url.split_once("?sslmode=verify-full")
        .or_else(|| url.split_once("&sslmode=verify-full"))
        .map_or(url, |(u, _)| u)
}

/// The test graphs served on `url`, tables in `schema`, a 2 s lease.
pub fn server(url: &str, schema: &str) -> Server {
    crate::common::with_graphs(Server::new())
        .postgres_with(url, PostgresOptions::new().schema(schema))
        .lease(Duration::from_secs(2))
}
