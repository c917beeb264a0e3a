//! Slow and idle clients cannot hold the server: 500 connections that send half a
//! request do not stop `/ok` or a run from being served and are closed after the
//! header deadline; at the connection cap new clients wait for a free slot instead
//! of failing; a body that stops arriving is a 408. And error answers keep a client's
//! keep-alive connection open.

use std::time::{Duration, Instant};

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::common::Harness;

/// A connection that sends the start of a request and nothing more.
async fn half_open(addr: std::net::SocketAddr) -> TcpStream {
    let mut tcp = TcpStream::connect(addr).await.expect("a connection");
    tcp.write_all(b"POST /threads HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appl")
        .await
        .expect("half a request");
    tcp
}

/// Whether the server closed `tcp` within `within` (an EOF or a reset).
async fn closed_within(tcp: &mut TcpStream, within: Duration) -> bool {
    let mut buf = [0u8; 512];
    loop {
        match tokio::time::timeout(within, tcp.read(&mut buf)).await {
            Err(_) => return false,
            Ok(Ok(0) | Err(_)) => return true,
            // A 408 or 400 written before closing: read on to the end.
            Ok(Ok(_)) => continue,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_hundred_half_open_connections_do_not_stop_the_server() {
    let h = Harness::start_with(|s| s.header_timeout(Duration::from_secs(2))).await;
    let addr = h.running.local_addr();
    let mut idle = Vec::new();
    for _ in 0..500 {
        idle.push(half_open(addr).await);
    }
    let asked = Instant::now();
    let (status, ok) = h.get("/ok").await;
    assert_eq!(status, 200, "{ok}");
    assert!(
        asked.elapsed() < Duration::from_secs(1),
        "/ok took {:?} beside 500 half-open connections",
        asked.elapsed()
    );
    let t = h.thread().await;
    let (status, out) = h
        .post(
            &format!("/threads/{t}/runs/wait"),
            json!({ "assistant_id": "job", "input": { "delay_ms": 1 } }),
        )
        .await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(out["log"], json!(["first", "second"]), "{out}");
    // Past the header deadline, the server lets go of every one of them.
    for (i, tcp) in idle.iter_mut().enumerate() {
        assert!(
            closed_within(tcp, Duration::from_secs(10)).await,
            "half-open connection {i} is still open long after the header deadline"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_connection_cap_a_new_client_waits_for_a_free_slot() {
    let h = Harness::start_with(|s| {
        s.max_connections(8)
            .header_timeout(Duration::from_millis(1500))
    })
    .await;
    let addr = h.running.local_addr();
    let mut idle = Vec::new();
    for _ in 0..8 {
        idle.push(TcpStream::connect(addr).await.expect("a connection"));
    }
    // Every slot is held: the request waits in the listen queue until the idle
    // connections are closed, then it is served.
    let asked = Instant::now();
    let (status, _) = h.get("/ok").await;
    assert_eq!(status, 200);
    let waited = asked.elapsed();
    assert!(
        waited >= Duration::from_millis(500),
        "served after {waited:?}: the cap of 8 connections did not hold"
    );
    assert!(
        waited < Duration::from_secs(10),
        "served only after {waited:?}"
    );
    for tcp in &mut idle {
        assert!(closed_within(tcp, Duration::from_secs(5)).await);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_stops_arriving_is_a_408() {
    let h = Harness::start_with(|s| s.body_timeout(Duration::from_millis(500))).await;
    let mut tcp = TcpStream::connect(h.running.local_addr())
        .await
        .expect("a connection");
    tcp.write_all(
        b"POST /threads HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"meta",
    )
    .await
    .expect("headers and the start of a body");
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), tcp.read_to_end(&mut answer)).await;
    assert!(read.is_ok(), "no answer to a stalled body");
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("stopped arriving"), "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_past_its_requests_per_minute_gets_a_429_and_others_do_not() {
    let h = Harness::start_with(|s| s.requests_per_client_per_minute(5)).await;
    for i in 0..5 {
        let (status, body) = h.get("/threads/none").await;
        assert_eq!(status, 404, "request {i}: {body}");
    }
    let r = h
        .http
        .get(h.url("/threads/none"))
        .send()
        .await
        .expect("a response");
    assert_eq!(r.status(), 429);
    let wait: u64 = r
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .expect("Retry-After in seconds");
    assert!((1..=60).contains(&wait), "{wait}");
    let (_, body) = crate::common::read(r).await;
    assert!(
        body["detail"]
            .as_str()
            .is_some_and(|d| d.contains("5 requests")),
        "{body}"
    );
    // The health check is never limited; another address has its own count.
    let (status, _) = h.get("/ok").await;
    assert_eq!(status, 200);
    let other = reqwest::Client::builder()
        .local_address(std::net::IpAddr::from([127, 0, 0, 2]))
        .build()
        .expect("a client on another loopback address");
    let r = other
        .get(h.url("/threads/none"))
        .send()
        .await
        .expect("a response");
    assert_eq!(r.status(), 404);
}

/// Error answers keep the connection open: a client sending 4xx-provoking and good
/// requests one after another over one keep-alive connection gets every answer on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_answers_keep_the_connection_alive() {
    let h = Harness::start().await;
    let addr = h.running.local_addr();
    let mut tcp = TcpStream::connect(addr).await.expect("a connection");
    let requests: [(&str, &str, &str, u16); 6] = [
        ("GET", "/threads/nope", "", 404),
        ("POST", "/threads/search", r#"{"sort_by": "colour"}"#, 422),
        ("POST", "/threads", r#"{"thread_idd": 1}"#, 422),
        ("POST", "/threads/search", "{bad json", 400),
        ("DELETE", "/ok", "", 405),
        ("GET", "/ok", "", 200),
    ];
    let mut buffer = Vec::new();
    for round in 0..20 {
        for (method, path, body, status) in requests {
            let request = format!(
                "{method} {path} HTTP/1.1\r\nHost: localhost\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            );
            tcp.write_all(request.as_bytes())
                .await
                .expect("the request is sent");
            let (got, close) = read_answer(&mut tcp, &mut buffer).await;
            assert_eq!(got, status, "round {round}: {method} {path}");
            assert!(
                !close,
                "round {round}: {method} {path} closed the connection"
            );
        }
    }
}

/// The status of one HTTP/1.1 answer read off `tcp` (its body skipped), and whether
/// it says it closes the connection. `buffer` keeps bytes read past it.
async fn read_answer(tcp: &mut TcpStream, buffer: &mut Vec<u8>) -> (u16, bool) {
    let mut chunk = [0_u8; 4096];
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = tokio::time::timeout(Duration::from_secs(5), tcp.read(&mut chunk))
            .await
            .expect("an answer within 5 s")
            .expect("read");
        assert!(n > 0, "the server closed the connection");
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).to_ascii_lowercase();
    let status: u16 = head[9..12].parse().expect("a status code");
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map_or(0, |v| v.trim().parse().expect("a length"));
    let close = head
        .lines()
        .any(|l| l.starts_with("connection:") && l.contains("close"));
    while buffer.len() < head_end + length {
        let n = tcp.read(&mut chunk).await.expect("read");
        assert!(n > 0, "the server closed the connection mid-body");
        buffer.extend_from_slice(&chunk[..n]);
    }
    buffer.drain(..head_end + length);
    (status, close)
}
