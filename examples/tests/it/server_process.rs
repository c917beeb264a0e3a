//! The server example as an operator runs it: a real process that logs the requests
//! it refuses, stops gracefully on SIGTERM (what `docker stop` and systemd send), and
//! says what went wrong in a sentence when it cannot start.

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The example's binary, which `cargo test` builds beside this one.
fn example() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary");
    let target = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>");
    target.join("examples").join("server")
}

fn signal(pid: u32, sig: &str) {
    let status = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status()
        .expect("kill(1)");
    assert!(status.success());
}

#[test]
fn the_server_example_logs_refusals_and_stops_gracefully_on_sigterm() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut child = Command::new(example())
        .args(["--addr", "127.0.0.1:0", "--db"])
        .arg(dir.path().join("runs.sqlite"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the server example starts (cargo test builds it)");
    let mut out = BufReader::new(child.stdout.take().expect("its stdout"));
    let mut line = String::new();
    let base = loop {
        line.clear();
        assert!(
            out.read_line(&mut line).expect("a line") > 0,
            "the example ended before serving"
        );
        if let Some(rest) = line.split("on http://").nth(1) {
            break rest
                .split_whitespace()
                .next()
                .expect("an address")
                .to_string();
        }
    };
    // A refused request (an unknown thread) is logged with its status.
    let mut tcp = std::net::TcpStream::connect(&base).expect("a connection");
    std::io::Write::write_all(
        &mut tcp,
        b"GET /threads/nope HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    )
    .expect("a request");
    let mut answer = String::new();
    tcp.read_to_string(&mut answer).expect("an answer");
    assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");

    signal(child.id(), "TERM");
    let stopped = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("its status") {
            break status;
        }
        assert!(
            stopped.elapsed() < Duration::from_secs(15),
            "SIGTERM did not stop the server"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "a graceful stop exits 0: {status}");
    let mut rest = String::new();
    out.read_to_string(&mut rest)
        .expect("the rest of its output");
    assert!(
        rest.contains("refused") && rest.contains("status=404") && rest.contains("/threads/nope"),
        "the refused request is logged:\n{rest}"
    );
    assert!(rest.contains("stopping"), "the stop is logged:\n{rest}");
}

#[test]
fn a_server_that_cannot_start_says_why_in_a_sentence() {
    let output = Command::new(example())
        .args(["--addr", "999.0.0.1:1"])
        .stdin(Stdio::null())
        .output()
        .expect("the server example runs");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with("error: cannot listen on 999.0.0.1:1"),
        "{stderr}"
    );
    assert!(!stderr.contains("Bind {"), "no Debug dump: {stderr}");
}
