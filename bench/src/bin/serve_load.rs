//! Load generator for a LangGraph Platform-compatible server: many clients at once,
//! each creating a thread and streaming a run on it.
//!
//! ```text
//! serve_load --url http://127.0.0.1:2024 [--clients 1000] [--runs-per-client 1]
//!            [--assistant chain3] [--mode stream|wait] [--json]
//! ```
//!
//! Every client opens its own HTTP/1.1 connection, then all wait on a barrier and start
//! together. Per run the client creates a thread (`POST /threads`), then
//! - `stream`: `POST /threads/{id}/runs/stream` with input `{"n": 1}` and
//!   `stream_mode: ["values", "updates"]`, reading the server-sent events to the end;
//! - `wait`: `POST /threads/{id}/runs/wait` with the same input, reading the final
//!   values.
//!
//! Each run is checked against the `chain3` graph: a 200 answer, a `metadata` event
//! first, no `error` event, one `updates` event per node, and a last `values` event with
//! `n == 4` and `log == ["a", "b", "c"]` (for `wait`: those final values). A run that
//! fails the check counts as a failure and is left out of the latencies, so a broken
//! server cannot look fast.
//!
//! Measured per run: time to first event (request sent → first complete SSE event
//! received; for `wait`, → response head received) and run latency (request sent →
//! stream closed or body read). Throughput is completed runs over the wall time from
//! the barrier to the last client's end. Thread creation is not part of either latency
//! but is part of the wall time.

use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::client::conn::http1::SendRequest;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::sync::Barrier;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// How a run is requested.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Mode {
    /// `POST /threads/{id}/runs/stream`, server-sent events.
    Stream,
    /// `POST /threads/{id}/runs/wait`, the final values as JSON.
    Wait,
}

/// Command line of `serve_load`.
#[derive(Parser, Debug)]
#[command(about = "Many concurrent streaming clients against a LangGraph Platform-style server")]
struct Args {
    /// The server's base URL (`http://host:port`, loopback).
    #[arg(long, default_value = "http://127.0.0.1:2024")]
    url: String,
    /// Concurrent clients, each on its own connection.
    #[arg(long, default_value_t = 1000)]
    clients: usize,
    /// Runs each client makes one after the other (each on a new thread).
    #[arg(long, default_value_t = 1)]
    runs_per_client: usize,
    /// The assistant (graph name) to run.
    #[arg(long, default_value = "chain3")]
    assistant: String,
    /// `stream` or `wait`.
    #[arg(long, value_enum, default_value_t = Mode::Stream)]
    mode: Mode,
    /// How long one run may take before it counts as failed.
    #[arg(long, default_value_t = 600)]
    timeout_secs: u64,
    /// A label for the table and the JSON line (e.g. `stategraph`, `langgraph`).
    #[arg(long, default_value = "")]
    label: String,
    /// Also print the results as one JSON line on stdout (the table goes to stderr).
    #[arg(long)]
    json: bool,
}

/// One finished run's timings.
struct Timing {
    first_event: Duration,
    total: Duration,
}

/// What a client saw.
#[derive(Default)]
struct ClientResult {
    ok: Vec<Timing>,
    failures: Vec<String>,
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let args = Args::parse();
    let authority = args
        .url
        .strip_prefix("http://")
        .ok_or("--url must start with http:// (loopback HTTP/1.1 only)")?
        .trim_end_matches('/')
        .to_string();
    let args = Arc::new(args);
    let barrier = Arc::new(Barrier::new(args.clients + 1));
    let mut handles = Vec::with_capacity(args.clients);
    for _ in 0..args.clients {
        let (args, barrier, authority) = (args.clone(), barrier.clone(), authority.clone());
        handles.push(tokio::spawn(async move {
            client(&args, &authority, &barrier).await
        }));
    }
    barrier.wait().await;
    let t0 = Instant::now();
    let mut ok = Vec::new();
    let mut failures = Vec::new();
    for h in handles {
        match h.await {
            Ok(r) => {
                ok.extend(r.ok);
                failures.extend(r.failures);
            }
            Err(e) => failures.push(format!("client task failed: {e}")),
        }
    }
    let wall = t0.elapsed();
    report(&args, &ok, &failures, wall);
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!("{} of the runs failed", failures.len()).into())
    }
}

/// One client: connect, wait for the others, then its runs one after the other.
async fn client(args: &Args, authority: &str, barrier: &Barrier) -> ClientResult {
    let mut result = ClientResult::default();
    let conn = connect(authority).await;
    barrier.wait().await;
    let mut sender = match conn {
        Ok(s) => s,
        Err(e) => {
            result
                .failures
                .extend((0..args.runs_per_client).map(|_| format!("connect: {e}")));
            return result;
        }
    };
    for _ in 0..args.runs_per_client {
        let limit = Duration::from_secs(args.timeout_secs);
        match tokio::time::timeout(limit, one_run(args, authority, &mut sender)).await {
            Ok(Ok(t)) => result.ok.push(t),
            Ok(Err(e)) => result.failures.push(e.to_string()),
            Err(_) => result
                .failures
                .push(format!("run took longer than {}s", args.timeout_secs)),
        }
        // A connection that failed mid-run cannot carry the next request.
        if sender.is_closed() {
            match connect(authority).await {
                Ok(s) => sender = s,
                Err(e) => {
                    let left = args.runs_per_client - result.ok.len() - result.failures.len();
                    result
                        .failures
                        .extend((0..left).map(|_| format!("reconnect: {e}")));
                    break;
                }
            }
        }
    }
    result
}

/// An HTTP/1.1 connection to `authority`, its driver spawned.
async fn connect(authority: &str) -> Result<SendRequest<Full<Bytes>>, Error> {
    let stream = tokio::net::TcpStream::connect(authority).await?;
    stream.set_nodelay(true)?;
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

fn post(
    authority: &str,
    path: &str,
    body: &Value,
    sse: bool,
) -> Result<Request<Full<Bytes>>, Error> {
    Ok(Request::post(path)
        .header("host", authority)
        .header("content-type", "application/json")
        .header(
            "accept",
            if sse {
                "text/event-stream"
            } else {
                "application/json"
            },
        )
        .body(Full::new(Bytes::from(body.to_string())))?)
}

async fn send(
    sender: &mut SendRequest<Full<Bytes>>,
    request: Request<Full<Bytes>>,
) -> Result<Response<Incoming>, Error> {
    sender.ready().await?;
    Ok(sender.send_request(request).await?)
}

/// Creates a thread, then runs `chain3` on it and checks the result.
async fn one_run(
    args: &Args,
    authority: &str,
    sender: &mut SendRequest<Full<Bytes>>,
) -> Result<Timing, Error> {
    let response = send(sender, post(authority, "/threads", &json!({}), false)?).await?;
    let status = response.status();
    let body = response.into_body().collect().await?.to_bytes();
    if !status.is_success() {
        return Err(format!(
            "POST /threads: {status}: {}",
            String::from_utf8_lossy(&body)
        )
        .into());
    }
    let thread: Value = serde_json::from_slice(&body)?;
    let thread_id = thread
        .get("thread_id")
        .and_then(Value::as_str)
        .ok_or("POST /threads answered without a thread_id")?;
    let input = json!({"n": 1});
    match args.mode {
        Mode::Stream => {
            let body = json!({
                "assistant_id": args.assistant,
                "input": input,
                "stream_mode": ["values", "updates"],
            });
            let path = format!("/threads/{thread_id}/runs/stream");
            let request = post(authority, &path, &body, true)?;
            let t0 = Instant::now();
            let response = send(sender, request).await?;
            stream_run(response, t0).await
        }
        Mode::Wait => {
            let body = json!({ "assistant_id": args.assistant, "input": input });
            let path = format!("/threads/{thread_id}/runs/wait");
            let request = post(authority, &path, &body, false)?;
            let t0 = Instant::now();
            let response = send(sender, request).await?;
            let first_event = t0.elapsed();
            let status = response.status();
            let body = response.into_body().collect().await?.to_bytes();
            let total = t0.elapsed();
            if !status.is_success() {
                return Err(
                    format!("runs/wait: {status}: {}", String::from_utf8_lossy(&body)).into(),
                );
            }
            check_values(&serde_json::from_slice(&body)?)?;
            Ok(Timing { first_event, total })
        }
    }
}

/// Reads a run's server-sent events to the end of the body and checks them.
async fn stream_run(response: Response<Incoming>, t0: Instant) -> Result<Timing, Error> {
    let status = response.status();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let mut body = response.into_body();
    if !status.is_success() {
        let text = body.collect().await?.to_bytes();
        return Err(format!("runs/stream: {status}: {}", String::from_utf8_lossy(&text)).into());
    }
    if !content_type.contains("text/event-stream") {
        return Err(format!("runs/stream answered `{content_type}`, not text/event-stream").into());
    }
    let mut parser = SseParser::default();
    let mut first_event = None;
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame?.into_data() {
            parser.feed(&data);
            if first_event.is_none() && !parser.events.is_empty() {
                first_event = Some(t0.elapsed());
            }
        }
    }
    let total = t0.elapsed();
    let events = parser.events;
    let first_event = first_event.ok_or("the stream closed without any event")?;
    check_events(&events)?;
    Ok(Timing { first_event, total })
}

/// The events of a `chain3` run, in order, as `(event name, data)`.
fn check_events(events: &[(String, Value)]) -> Result<(), Error> {
    match events.first() {
        Some((name, data)) if name == "metadata" && data.get("run_id").is_some() => {}
        other => {
            return Err(format!("first event is not `metadata` with a run_id: {other:?}").into());
        }
    }
    if let Some((_, data)) = events.iter().find(|(name, _)| name == "error") {
        return Err(format!("the run sent an error event: {data}").into());
    }
    let updates: Vec<&Value> = events
        .iter()
        .filter(|(name, _)| name == "updates")
        .map(|(_, d)| d)
        .collect();
    let nodes: Vec<&str> = updates
        .iter()
        .filter_map(|d| d.as_object())
        .flat_map(|o| o.keys().map(String::as_str))
        .collect();
    if nodes != ["a", "b", "c"] {
        return Err(format!("expected one `updates` event per node a, b, c; got {nodes:?}").into());
    }
    let last = events
        .iter()
        .rev()
        .find(|(name, _)| name == "values")
        .ok_or("the stream has no `values` event")?;
    check_values(&last.1)
}

/// The final values of a `chain3` run from input `{"n": 1}`.
fn check_values(values: &Value) -> Result<(), Error> {
    let n = values.get("n").and_then(Value::as_u64);
    let log = values.get("log");
    if n == Some(4) && log == Some(&json!(["a", "b", "c"])) {
        Ok(())
    } else {
        Err(format!("final values are not n == 4, log == [a, b, c]: {values}").into())
    }
}

/// A server-sent events parser (the fields this benchmark needs: `event` and `data`;
/// lines end in `\n` or `\r\n`; `:` comments and keep-alives are skipped).
#[derive(Default)]
struct SseParser {
    pending: Vec<u8>,
    event: String,
    data: Vec<String>,
    events: Vec<(String, Value)>,
}

impl SseParser {
    fn feed(&mut self, bytes: &[u8]) {
        self.pending.extend_from_slice(bytes);
        let mut start = 0;
        while let Some(end) = self.pending[start..].iter().position(|&b| b == b'\n') {
            let mut line = &self.pending[start..start + end];
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            let line = String::from_utf8_lossy(line).into_owned();
            start += end + 1;
            self.line(&line);
        }
        self.pending.drain(..start);
    }

    fn line(&mut self, line: &str) {
        if line.is_empty() {
            let event = std::mem::take(&mut self.event);
            let data = std::mem::take(&mut self.data);
            if event.is_empty() && data.is_empty() {
                return;
            }
            let text = data.join("\n");
            let value = if text.trim().is_empty() {
                Value::Null
            } else {
                // Data that is not JSON is kept as a string; the checks then fail.
                serde_json::from_str(&text).unwrap_or(Value::String(text))
            };
            self.events.push((event, value));
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => self.event = value.to_string(),
            "data" => self.data.push(value.to_string()),
            _ => {}
        }
    }
}

/// The `q`-quantile (nearest rank) of sorted durations, in milliseconds.
fn quantile_ms(sorted: &[Duration], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1].as_secs_f64() * 1e3
}

fn report(args: &Args, ok: &[Timing], failures: &[String], wall: Duration) {
    let mut first: Vec<Duration> = ok.iter().map(|t| t.first_event).collect();
    let mut total: Vec<Duration> = ok.iter().map(|t| t.total).collect();
    first.sort();
    total.sort();
    let runs = args.clients * args.runs_per_client;
    let per_s = ok.len() as f64 / wall.as_secs_f64();
    let mode = match args.mode {
        Mode::Stream => "stream",
        Mode::Wait => "wait",
    };
    eprintln!(
        "| server | mode | clients | runs | failures | TTFE p50 (ms) | TTFE p99 (ms) | run p50 (ms) | run p99 (ms) | runs/s | wall (s) |"
    );
    eprintln!("|---|---|---|---|---|---|---|---|---|---|---|");
    eprintln!(
        "| {} | {mode} | {} | {runs} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {per_s:.1} | {:.2} |",
        if args.label.is_empty() {
            &args.url
        } else {
            &args.label
        },
        args.clients,
        failures.len(),
        quantile_ms(&first, 0.5),
        quantile_ms(&first, 0.99),
        quantile_ms(&total, 0.5),
        quantile_ms(&total, 0.99),
        wall.as_secs_f64(),
    );
    let mut kinds: Vec<&String> = failures.iter().collect();
    kinds.sort();
    kinds.dedup();
    for k in kinds.iter().take(5) {
        let count = failures.iter().filter(|f| f == k).count();
        eprintln!("  failure ({count}x): {k}");
    }
    if args.json {
        let num = |v: f64| if v.is_finite() { json!(v) } else { Value::Null };
        println!(
            "{}",
            json!({
                "label": args.label,
                "mode": mode,
                "clients": args.clients,
                "runs": runs,
                "completed": ok.len(),
                "failures": failures.len(),
                "ttfe_p50_ms": num(quantile_ms(&first, 0.5)),
                "ttfe_p99_ms": num(quantile_ms(&first, 0.99)),
                "run_p50_ms": num(quantile_ms(&total, 0.5)),
                "run_p99_ms": num(quantile_ms(&total, 0.99)),
                "runs_per_s": per_s,
                "wall_s": wall.as_secs_f64(),
            })
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(chunks: &[&str]) -> Vec<(String, Value)> {
        let mut p = SseParser::default();
        for c in chunks {
            p.feed(c.as_bytes());
        }
        p.events
    }

    /// A `chain3` stream as stategraph-server sends it (`\n` lines).
    const GOOD: &str = "event: metadata\ndata: {\"run_id\":\"r1\",\"attempt\":1}\nid: 1\n\n\
        : keep-alive\n\n\
        event: values\ndata: {\"n\":1,\"log\":[]}\n\n\
        event: updates\ndata: {\"a\":{\"n\":1,\"log\":[\"a\"]}}\n\n\
        event: updates\ndata: {\"b\":{\"n\":1,\"log\":[\"b\"]}}\n\n\
        event: updates\ndata: {\"c\":{\"n\":1,\"log\":[\"c\"]}}\n\n\
        event: values\ndata: {\"n\":4,\"log\":[\"a\",\"b\",\"c\"]}\n\n\
        event: end\ndata: null\n\n";

    #[test]
    fn a_whole_stream_split_anywhere_parses_to_the_same_events() {
        let whole = parse(&[GOOD]);
        assert_eq!(whole.len(), 7);
        assert_eq!(whole[0].0, "metadata");
        assert_eq!(whole[6], ("end".to_string(), Value::Null));
        for cut in 1..GOOD.len() {
            assert_eq!(parse(&[&GOOD[..cut], &GOOD[cut..]]), whole, "cut at {cut}");
        }
        check_events(&whole).unwrap();
    }

    #[test]
    fn crlf_lines_and_multi_line_data_as_langgraph_sends_them() {
        let events = parse(&["event: values\r\ndata: {\"n\":\r\ndata: 4}\r\n\r\n"]);
        assert_eq!(events, vec![("values".to_string(), json!({"n": 4}))]);
    }

    #[test]
    fn a_stream_missing_a_node_update_fails_the_check() {
        let events = parse(&[&GOOD.replace(
            "event: updates\ndata: {\"b\":{\"n\":1,\"log\":[\"b\"]}}\n\n",
            "",
        )]);
        let err = check_events(&events).unwrap_err().to_string();
        assert!(err.contains("[\"a\", \"c\"]"), "{err}");
    }

    #[test]
    fn a_stream_without_metadata_first_or_with_wrong_values_fails_the_check() {
        let no_metadata = parse(&[GOOD.split_once("id: 1\n\n").unwrap().1]);
        assert!(check_events(&no_metadata).is_err());
        let wrong = parse(&[&GOOD.replace("{\"n\":4,", "{\"n\":3,")]);
        assert!(check_events(&wrong).is_err());
        let error = parse(&[GOOD, "event: error\ndata: {\"error\":\"X\"}\n\n"]);
        assert!(check_events(&error).is_err());
    }

    #[test]
    fn quantiles_are_nearest_rank() {
        let d: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(quantile_ms(&d, 0.5), 50.0);
        assert_eq!(quantile_ms(&d, 0.99), 99.0);
        assert_eq!(quantile_ms(&d[..1], 0.99), 1.0);
        assert!(quantile_ms(&[], 0.5).is_nan());
    }
}
