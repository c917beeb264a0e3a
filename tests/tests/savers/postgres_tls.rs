//! TLS to PostgreSQL, libpq's way: `sslmode` and `sslrootcert` in the URL (or the CA in
//! the options), checked against a server with `ssl=on` and a certificate signed by a
//! CA of its own (`.ci/run` makes one; `STATEGRAPH_POSTGRES_TLS_CA` names it). The
//! certificate names `localhost` and `127.0.0.1`.
//!
//! The failures that need no TLS server (an unknown mode, a missing CA file, a server
//! refusing TLS under `require`) run everywhere.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};

use stategraph::checkpoint::{CheckpointError, CheckpointSaver};
use stategraph_postgres::{PostgresError, PostgresOptions, PostgresSaver};
use stategraph_tests::servers;

/// A CA unrelated to the test server's (its key was thrown away).
const OTHER_CA: &str = "-----BEGIN CERTIFICATE-----
MIIBtTCCAVugAwIBAgIULHX+RWq4NVLl1gZnl3v6p9ez1CIwCgYIKoZIzj0EAwIw
JzElMCMGA1UEAwwcc3RhdGVncmFwaCB1bnJlbGF0ZWQgdGVzdCBDQTAgFw0yNjEx
MjQyMjIwMTlaGA8yMTI2MTAzMTIyMjAxOVowJzElMCMGA1UEAwwcc3RhdGVncmFw
aCB1bnJlbGF0ZWQgdGVzdCBDQTBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABCpm
NuQN9+UWpUocz/KNYaV/6GYt6F9jB/qrWqKd8vT46217zkwZa5MGnwAQZYsnj+uE
/T3u5V4zvg2Rrr8crcCjYzBhMB0GA1UdDgQWBBRl+Eluj+1tSTan1q+4/84hAQOi
0jAfBgNVHSMEGDAWgBRl+Eluj+1tSTan1q+4/84hAQOi0jAPBgNVHRMBAf8EBTAD
AQH/MA4GA1UdDwEB/wQEAwIBBjAKBggqhkjOPQQDAgNIADBFAiAg4ovCVjefPytY
vQhIEJLYgjAC2w+nOjPIExCFTfLomAIhAKjB2sOfQmbU+mewgzMaoqIoHhIoZxr4
zoHlJvIyogmj
-----END CERTIFICATE-----
";

/// The saver's own error behind `err`.
fn postgres_error(err: &CheckpointError) -> &PostgresError {
    match err {
        CheckpointError::Storage { source, .. } => source
            .downcast_ref::<PostgresError>()
            .unwrap_or_else(|| panic!("not a PostgresError: {err:?}")),
        other => panic!("expected a storage error, got {other:?}"),
    }
}

/// How many of the sessions named `app` use TLS, and how many there are.
async fn tls_sessions(url: &str, app: &str) -> (i64, i64) {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    let driver = tokio::spawn(connection);
    let row = client
        .query_one(
            "SELECT count(*) FILTER (WHERE s.ssl), count(*)
             FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid)
             WHERE a.application_name = $1",
            &[&app],
        )
        .await
        .unwrap();
    drop(client);
    let _ = driver.await;
    (row.get(0), row.get(1))
}

/// Connects with `params` added to `url` and the tables in a fresh schema, takes a
/// thread's lock, checks that every connection the saver opened (its pool's and its
/// lock session) is encrypted, and drops the schema.
async fn connects_encrypted(url: &str, params: &[(&str, &str)], options: PostgresOptions) {
    let app = servers::fresh_schema("tls_app");
    let schema = servers::fresh_schema("tls");
    let mut all = vec![("application_name", app.as_str())];
    all.extend_from_slice(params);
    let saver = PostgresSaver::connect_with(
        &servers::with_params(url, &all),
        options.schema(schema.clone()),
    )
    .await
    .unwrap_or_else(|e| panic!("connecting with {params:?}: {e}: {e:?}"));
    assert!(saver.list_threads().await.unwrap().is_empty());
    // The lock session is made like the pool's connections.
    let lock = saver
        .lock_thread("tls", std::time::Duration::from_secs(5))
        .await
        .unwrap_or_else(|e| panic!("locking with {params:?}: {e}: {e:?}"));
    let (encrypted, total) = tls_sessions(url, &app).await;
    drop(lock);
    assert!(
        total >= 2,
        "{total} sessions named {app}, expected the pool's and the lock's"
    );
    assert_eq!(
        encrypted, total,
        "{params:?}: some sessions are not encrypted"
    );
    drop(saver);
    let url = url.to_string();
    tokio::task::spawn_blocking(move || servers::drop_schema(&url, &schema))
        .await
        .unwrap();
}

/// `url` as a key/value string connecting to `host` while the TCP connection goes to
/// 127.0.0.1 (`hostaddr`): the certificate is then checked against `host`.
fn as_host(url: &str, host: &str, extra: &str) -> String {
    let pg: tokio_postgres::Config = url.parse().unwrap();
    let quote = |s: &str| format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"));
    let password = pg
        .get_password()
        .map(|p| quote(&String::from_utf8_lossy(p)))
        .unwrap_or_else(|| "''".to_string());
    format!(
        "host={host} hostaddr=127.0.0.1 port={} user={} password={password} dbname={} {extra}",
        pg.get_ports().first().copied().unwrap_or(5432),
        quote(pg.get_user().unwrap_or("postgres")),
        quote(pg.get_dbname().unwrap_or("postgres")),
    )
}

#[tokio::test]
async fn require_encrypts_without_a_ca() {
    let Some((url, _)) = servers::postgres_tls(module_path!()) else {
        return;
    };
    connects_encrypted(&url, &[("sslmode", "require")], PostgresOptions::new()).await;
}

#[tokio::test]
async fn verify_full_accepts_the_servers_certificate_with_its_ca() {
    let Some((url, ca)) = servers::postgres_tls(module_path!()) else {
        return;
    };
    // The CA in the URL, as libpq's `sslrootcert`.
    connects_encrypted(
        &url,
        &[("sslmode", "verify-full"), ("sslrootcert", &ca)],
        PostgresOptions::new(),
    )
    .await;
    // The CA in the options, from a file and as PEM bytes.
    connects_encrypted(
        &url,
        &[("sslmode", "verify-full")],
        PostgresOptions::new().ca_file(&ca),
    )
    .await;
    let pem = std::fs::read(&ca).unwrap();
    connects_encrypted(
        &url,
        &[("sslmode", "verify-full")],
        PostgresOptions::new().ca_pem(pem),
    )
    .await;
    // `require` with the CA checks it too, and accepts the right one.
    connects_encrypted(
        &url,
        &[("sslmode", "require"), ("sslrootcert", &ca)],
        PostgresOptions::new(),
    )
    .await;
}

#[tokio::test]
async fn verify_full_refuses_a_host_name_the_certificate_does_not_name() {
    let Some((url, ca)) = servers::postgres_tls(module_path!()) else {
        return;
    };
    let conn = as_host(&url, "db.example.invalid", "sslmode=verify-full");
    let err = PostgresSaver::connect_with(&conn, PostgresOptions::new().ca_file(&ca))
        .await
        .unwrap_err();
    let PostgresError::Tls { mode, reason, .. } = postgres_error(&err) else {
        panic!("expected a TLS failure, got {err:?}");
    };
    assert_eq!(mode, "verify-full");
    assert!(reason.to_lowercase().contains("name"), "{reason}");
    let message = err.to_string() + &postgres_error(&err).to_string();
    assert!(message.contains("host name"), "{message}");

    // The same name under `verify-ca` is accepted: only the chain is checked.
    let conn = as_host(&url, "db.example.invalid", "sslmode=verify-ca");
    let schema = servers::fresh_schema("tls_ca");
    let saver = PostgresSaver::connect_with(
        &conn,
        PostgresOptions::new().ca_file(&ca).schema(schema.clone()),
    )
    .await
    .unwrap_or_else(|e| panic!("verify-ca with the right CA: {e:?}"));
    assert!(saver.list_threads().await.unwrap().is_empty());
    drop(saver);
    tokio::task::spawn_blocking(move || servers::drop_schema(&url, &schema))
        .await
        .unwrap();
}

#[tokio::test]
async fn verify_ca_refuses_a_certificate_from_another_ca() {
    let Some((url, _)) = servers::postgres_tls(module_path!()) else {
        return;
    };
    for mode in ["verify-ca", "verify-full", "require"] {
        let err = PostgresSaver::connect_with(
            &servers::with_params(&url, &[("sslmode", mode)]),
            PostgresOptions::new().ca_pem(OTHER_CA),
        )
        .await
        .unwrap_err();
        let PostgresError::Tls {
            mode: shown,
            reason,
            ..
        } = postgres_error(&err)
        else {
            panic!("{mode}: expected a TLS failure, got {err:?}");
        };
        assert_eq!(shown, mode);
        assert!(
            reason.contains("UnknownIssuer") || reason.to_lowercase().contains("issuer"),
            "{mode}: {reason}"
        );
        assert!(postgres_error(&err).to_string().contains("sslrootcert"));
    }
}

#[tokio::test]
async fn an_unknown_sslmode_and_a_missing_ca_file_are_named_before_connecting() {
    // Nothing listens here: these fail before any connection is tried.
    let url = "postgres://u:secret@127.0.0.1:9/db";
    let err = PostgresSaver::connect(&format!("{url}?sslmode=verify_full"))
        .await
        .unwrap_err();
    match postgres_error(&err) {
        PostgresError::InvalidSslMode { value } => assert_eq!(value, "verify_full"),
        other => panic!("expected an unknown sslmode, got {other:?}"),
    }
    assert!(postgres_error(&err).to_string().contains("verify-full"));

    let err = PostgresSaver::connect(&format!(
        "{url}?sslmode=verify-full&sslrootcert=/nonexistent/stategraph-ca.pem"
    ))
    .await
    .unwrap_err();
    let PostgresError::CaFile { path, .. } = postgres_error(&err) else {
        panic!("expected a CA file failure, got {err:?}");
    };
    assert_eq!(path.to_str(), Some("/nonexistent/stategraph-ca.pem"));
    assert!(!err.to_string().contains("secret"));
}

/// A server that answers the TLS request with "no", then closes each connection; its
/// address and a count of the TLS requests it answered.
fn plain_only_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = [0u8; 8];
            if stream.read_exact(&mut request).is_ok()
                // SSLRequest: length 8, code 80877103.
                && request == [0, 0, 0, 8, 4, 210, 22, 47]
            {
                let _ = stream.write_all(b"N");
            }
        }
    });
    addr
}

#[tokio::test]
async fn require_against_a_server_without_tls_fails_saying_so_and_prefer_goes_plain() {
    let addr = plain_only_server();
    let err = PostgresSaver::connect(&format!("postgres://u:p@{addr}/db?sslmode=require"))
        .await
        .unwrap_err();
    match postgres_error(&err) {
        PostgresError::TlsUnsupported { mode, .. } => assert_eq!(mode, "require"),
        other => panic!("expected a refusal of TLS, got {other:?}"),
    }
    assert!(postgres_error(&err).to_string().contains("ssl"));
    // `prefer` goes on in plain text after the refusal: this server then hangs up, so
    // the failure is a plain connection failure, not a TLS one.
    let err = PostgresSaver::connect(&format!(
        "postgres://u:p@{addr}/db?sslmode=prefer&connect_timeout=2"
    ))
    .await
    .unwrap_err();
    assert!(
        matches!(
            postgres_error(&err),
            PostgresError::Connect { .. } | PostgresError::Timeout { .. }
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn tables_exist_looks_over_tls_and_creates_nothing() {
    let Some((base, ca)) = servers::postgres_tls(module_path!()) else {
        return;
    };
    let url = servers::with_params(&base, &[("sslmode", "verify-full"), ("sslrootcert", &ca)]);
    let schema = servers::fresh_schema("tls_probe");
    let options = PostgresOptions::new().schema(schema.clone());
    // Twice: looking must not create the tables.
    for _ in 0..2 {
        let found = stategraph_postgres::tables_exist(&url, &options)
            .await
            .unwrap_or_else(|e| panic!("{e}: {e:?}"));
        assert!(!found, "no saver has used schema {schema}");
    }
    let saver = PostgresSaver::connect_with(&url, options.clone())
        .await
        .unwrap_or_else(|e| panic!("{e}: {e:?}"));
    drop(saver);
    assert!(
        stategraph_postgres::tables_exist(&url, &options)
            .await
            .unwrap()
    );
    // A CA that did not sign the server's certificate is refused here too.
    let other = PostgresOptions::new()
        .schema(schema.clone())
        .ca_pem(OTHER_CA);
    let strict = servers::with_params(&base, &[("sslmode", "verify-ca")]);
    assert!(
        stategraph_postgres::tables_exist(&strict, &other)
            .await
            .is_err()
    );
    tokio::task::spawn_blocking(move || servers::drop_schema(&base, &schema))
        .await
        .unwrap();
}
