//! Connecting to a PostgreSQL address that accepts connections and never answers
//! fails within the connect timeout, naming the step that did not finish: the
//! startup handshake of the saver's first connection, or a thread's lock session.

use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use stategraph::checkpoint::{CheckpointError, CheckpointSaver};
use stategraph_postgres::{PostgresError, PostgresOptions, PostgresSaver};
use stategraph_tests::servers;

/// A listener that accepts connections and never answers; its address. The first
/// `forward` connections are instead passed through to `upstream`.
fn silent_server(forward: usize, upstream: Option<SocketAddr>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for (n, stream) in listener.incoming().enumerate() {
            let Ok(client) = stream else { continue };
            match upstream {
                Some(upstream) if n < forward => {
                    let server = TcpStream::connect(upstream).unwrap();
                    let (mut c2, mut s2) =
                        (client.try_clone().unwrap(), server.try_clone().unwrap());
                    let (mut c1, mut s1) = (client, server);
                    std::thread::spawn(move || std::io::copy(&mut c1, &mut s1));
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut s2, &mut c2);
                        let _ = c2.flush();
                    });
                }
                _ => held.push(client),
            }
        }
    });
    addr
}

/// The saver's own error behind `err`.
fn timeout_of(err: &CheckpointError) -> (&str, Duration) {
    let CheckpointError::Storage { source, .. } = err else {
        panic!("expected a storage error, got {err:?}");
    };
    match source.downcast_ref::<PostgresError>() {
        Some(PostgresError::Timeout { step, after, .. }) => (step.as_str(), *after),
        other => panic!("expected a timeout, got {other:?} ({err})"),
    }
}

#[tokio::test]
async fn the_urls_connect_timeout_bounds_the_startup_handshake() {
    let addr = silent_server(0, None);
    let started = Instant::now();
    let err = PostgresSaver::connect(&format!("postgres://u:secret@{addr}/db?connect_timeout=1"))
        .await
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let (step, after) = timeout_of(&err);
    assert!(step.contains("startup handshake"), "{step}");
    assert_eq!(after, Duration::from_secs(1));
    let text = err.to_string();
    assert!(text.contains("did not finish within 1 s"), "{text}");
    assert!(!text.contains("secret"), "{text}");
}

#[tokio::test]
async fn the_options_timeout_applies_without_one_in_the_url() {
    let addr = silent_server(0, None);
    let started = Instant::now();
    let err = PostgresSaver::connect_with(
        &format!("postgres://u@{addr}/db"),
        PostgresOptions::new().connect_timeout(Duration::from_millis(500)),
    )
    .await
    .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(timeout_of(&err).1, Duration::from_millis(500));
}

#[tokio::test]
async fn without_any_timeout_the_default_is_ten_seconds() {
    let addr = silent_server(0, None);
    let started = Instant::now();
    let err = PostgresSaver::connect(&format!("postgres://u@{addr}/db"))
        .await
        .unwrap_err();
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(9) && took < Duration::from_secs(20),
        "{took:?}"
    );
    assert_eq!(timeout_of(&err).1, Duration::from_secs(10));
}

/// The server answers the saver's pooled connection, then stops answering new ones:
/// taking a thread's lock (a session of its own) fails naming that step.
#[tokio::test]
async fn a_lock_session_that_never_opens_fails_naming_it() {
    let Some(url) = servers::postgres_url(module_path!()) else {
        return;
    };
    let config: tokio_postgres::Config = url.parse().unwrap();
    let (Some(tokio_postgres::config::Host::Tcp(host)), Some(port)) =
        (config.get_hosts().first(), config.get_ports().first())
    else {
        panic!(
            "{}: the test needs a TCP host and port in the URL",
            servers::POSTGRES_URL_VAR
        );
    };
    let upstream: SocketAddr = format!("{host}:{port}").parse().unwrap();
    let proxy = silent_server(1, Some(upstream));
    let through = url.replacen(&format!("{host}:{port}"), &proxy.to_string(), 1);
    assert_ne!(through, url, "the URL names {host}:{port}");
    let saver = PostgresSaver::connect_with(
        &through,
        PostgresOptions::new()
            .pool_size(1)
            .connect_timeout(Duration::from_secs(1)),
    )
    .await
    .unwrap();
    let started = Instant::now();
    let err = saver
        .lock_thread("stuck", Duration::from_secs(30))
        .await
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let (step, _) = timeout_of(&err);
    assert!(
        step.contains("lock session") && step.contains("thread `stuck`"),
        "{step}"
    );
}
