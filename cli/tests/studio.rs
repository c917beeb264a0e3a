//! `stategraph studio`: the binary serves the Studio over a SQLite file, read-only,
//! and prints where; the graph comes from what the checkpoints recorded.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command as Process, Stdio};

use common::{DEMO_THREAD, Fixture};
use serde_json::Value;

/// A GET over plain HTTP/1.1: the status, the headers (lowercase names) and the body.
fn get(addr: &str, path: &str) -> (u16, String, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, head.to_ascii_lowercase(), body.to_string())
}

/// Kills the served process when the test ends, whatever happens.
struct Served(std::process::Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn studio_serves_the_page_and_the_api_over_the_file_and_says_where() {
    let f = Fixture::with_demo().await;
    let child = Process::new(env!("CARGO_BIN_EXE_stategraph"))
        .args([
            "--db",
            f.db.to_str().unwrap(),
            "studio",
            "--addr",
            "127.0.0.1:0",
        ])
        .env_remove(stategraph_cli::URL_ENV)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut served = Served(child);
    let mut line = String::new();
    BufReader::new(served.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("studio at ")
        .unwrap_or_else(|| panic!("printed {line:?}"));
    let addr = url
        .strip_prefix("http://")
        .and_then(|rest| rest.strip_suffix("/studio"))
        .unwrap_or_else(|| panic!("printed {line:?}"));
    assert!(
        addr.starts_with("127.0.0.1:") && !addr.ends_with(":0"),
        "{addr}"
    );

    let (status, head, body) = get(addr, "/studio");
    assert_eq!(status, 200);
    assert!(head.contains("content-type: text/html"), "{head}");
    assert!(body.contains("<html"), "{body}");

    let (status, _, body) = get(addr, "/studio/api/threads");
    assert_eq!(status, 200, "{body}");
    let list: Value = serde_json::from_str(&body).unwrap();
    let ids: Vec<&str> = list["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["thread_id"].as_str().unwrap())
        .collect();
    assert_eq!(list["total"], 3, "{list}");
    for id in [DEMO_THREAD, "ticket-open", "ticket-done"] {
        assert!(ids.contains(&id), "{ids:?}");
    }

    let (_, _, body) = get(addr, "/studio/api/info");
    let info: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (info["mode"].as_str(), info["drive"].as_bool()),
        (Some("stored"), Some(false))
    );

    // The demo's graph, with no demo code in this process.
    let (status, _, body) = get(addr, &format!("/studio/api/threads/{DEMO_THREAD}"));
    assert_eq!(status, 200, "{body}");
    let thread: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(thread["status"], "finished");
    let nodes: Vec<&str> = thread["graph"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    assert!(
        nodes.contains(&"approve") && nodes.contains(&"publish"),
        "{nodes:?}"
    );
}

#[test]
fn studio_on_a_missing_file_fails_as_the_other_commands_do() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nothing.sqlite");
    let run = common::stategraph(&["--db", missing.to_str().unwrap(), "studio"]);
    let err = run.fails(3);
    assert!(err.contains("does not exist"), "{err}");
    assert!(!missing.exists(), "nothing was created");
}
