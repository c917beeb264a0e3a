//! Database servers for tests that need one.
//!
//! PostgreSQL tests read the server from `STATEGRAPH_POSTGRES_URL`. When it is unset
//! they skip with a notice saying how to enable them, except under `CI=true`, where a
//! missing server is a failure: CI must run them for real.

/// The environment variable naming the PostgreSQL server tests use.
pub const POSTGRES_URL_VAR: &str = "STATEGRAPH_POSTGRES_URL";

/// The PostgreSQL URL to test against, or `None` (after printing how to enable the
/// test) when none is configured outside CI.
///
/// # Panics
/// When no server is configured and `CI` is `true`.
pub fn postgres_url(test: &str) -> Option<String> {
    match std::env::var(POSTGRES_URL_VAR) {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => {
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!(
                    "{test}: {POSTGRES_URL_VAR} is not set, and CI=true requires the PostgreSQL tests to run; point it at a server (e.g. postgres://stategraph:stategraph@127.0.0.1:5432/stategraph)"
                );
            }
            // Straight to the process's stderr: the test harness hides printed output
            // of passing tests, and this notice should be seen.
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "notice: {test} skipped: set {POSTGRES_URL_VAR}=postgres://user:password@host:5432/database to run it against a PostgreSQL server"
            );
            None
        }
    }
}

/// A schema name no other test run uses, for tests that need tables of their own.
pub fn fresh_schema(prefix: &str) -> String {
    format!(
        "{prefix}_{}",
        stategraph::checkpoint::new_checkpoint_id().to_lowercase()
    )
}

/// Drops `schema` and everything in it (cleaning up after a test).
///
/// # Panics
/// When the server cannot be reached or refuses.
pub fn drop_schema(url: &str, schema: &str) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .expect("connect to drop a test schema");
        let driver = tokio::spawn(connection);
        client
            .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
            .await
            .expect("drop a test schema");
        drop(client);
        let _ = driver.await;
    });
}

/// The environment variable naming the PEM file of the CA that signed the test
/// server's certificate (set by `.ci/run`, whose server runs with `ssl=on`).
pub const POSTGRES_TLS_CA_VAR: &str = "STATEGRAPH_POSTGRES_TLS_CA";

/// The PostgreSQL URL and the path of its server's CA certificate, for TLS tests, or
/// `None` (after printing a skip line) when either is missing outside CI.
///
/// # Panics
/// When either is missing and `CI` is `true`.
pub fn postgres_tls(test: &str) -> Option<(String, String)> {
    let url = std::env::var(POSTGRES_URL_VAR)
        .ok()
        .filter(|v| !v.trim().is_empty());
    let ca = std::env::var(POSTGRES_TLS_CA_VAR)
        .ok()
        .filter(|v| !v.trim().is_empty());
    match (url, ca) {
        (Some(url), Some(ca)) => Some((url, ca)),
        _ => {
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!(
                    "{test}: {POSTGRES_URL_VAR} and {POSTGRES_TLS_CA_VAR} must both be set under CI=true; .ci/run's start_postgres sets them for a server with ssl=on"
                );
            }
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "skipping: {test}: set {POSTGRES_URL_VAR} to a server with ssl=on and {POSTGRES_TLS_CA_VAR} to the PEM file of the CA that signed its certificate"
            );
            None
        }
    }
}

/// `url` with `params` added to its query string.
pub fn with_params(url: &str, params: &[(&str, &str)]) -> String {
    let mut out = url.to_string();
    for (key, value) in params {
        out.push(if out.contains('?') { '&' } else { '?' });
        out.push_str(key);
        out.push('=');
        out.push_str(value);
    }
    out
}
