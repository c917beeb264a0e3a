//! Golden traces: the full multi-mode event sequence of a linear chain, a `Send`
//! fan-out, a join across supersteps, an interrupt and resume, and a failure, with
//! checkpoint ids, interrupt ids and timestamps normalized, compared to
//! `tests/golden/<name>.trace` (`STATEGRAPH_BLESS=1` rewrites them); the fan-out and
//! join traces stay the same across 50 runs with random task sleeps.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use serde_json::json;
use stategraph::checkpoint::{CheckpointConfig, CheckpointMetadata, InMemorySaver};
use stategraph::prelude::*;
use stategraph::{DebugKind, RunInput, RunStream};

// --- rendering ----------------------------------------------------------------------

/// Replaces run-specific names (checkpoint ids, interrupt ids, timestamps) with stable
/// placeholders numbered by first appearance.
#[derive(Default)]
struct Normalizer {
    checkpoints: HashMap<String, usize>,
    interrupts: HashMap<String, usize>,
}

impl Normalizer {
    fn checkpoint(&mut self, id: &str) -> String {
        let n = self.checkpoints.len() + 1;
        format!(
            "ckpt#{}",
            self.checkpoints.entry(id.to_string()).or_insert(n)
        )
    }

    fn interrupt(&mut self, id: &str) -> String {
        let n = self.interrupts.len() + 1;
        format!("int#{}", self.interrupts.entry(id.to_string()).or_insert(n))
    }

    fn config(&mut self, thread: &str, config: &CheckpointConfig) -> String {
        assert_eq!(config.thread_id, thread, "checkpoint of another thread");
        assert_eq!(config.checkpoint_ns, "", "root graph namespace");
        match &config.checkpoint_id {
            Some(id) => self.checkpoint(id),
            None => "latest".to_string(),
        }
    }

    fn metadata(&mut self, m: &CheckpointMetadata) -> String {
        let parents: Vec<String> = m
            .parents
            .iter()
            .map(|(ns, id)| format!("{ns:?}:{}", self.checkpoint(id)))
            .collect();
        assert_eq!(m.run_id, None);
        let source = serde_json::to_value(m.source).unwrap();
        format!(
            "source={} step={} parents={{{}}}",
            source.as_str().unwrap(),
            m.step,
            parents.join(",")
        )
    }

    fn interrupts(&mut self, interrupts: &[Interrupt]) -> String {
        let items: Vec<String> = interrupts
            .iter()
            .map(|i| {
                assert!(!i.id.is_empty());
                format!(
                    "{} node={} value={}",
                    self.interrupt(&i.id),
                    i.node,
                    i.value
                )
            })
            .collect();
        format!("[{}]", items.join(", "))
    }
}

/// RFC 3339 with milliseconds in UTC: `2024-05-01T12:34:56.789Z`.
fn assert_timestamp(ts: &str) {
    let b = ts.as_bytes();
    let digits = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18, 20, 21, 22];
    let ok = b.len() == 24
        && digits.iter().all(|&i| b[i].is_ascii_digit())
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && b[19] == b'.'
        && b[23] == b'Z';
    assert!(ok, "not an RFC 3339 timestamp: {ts:?}");
}

/// The state as `{channel: json, ...}` in field order.
fn state<S: GraphState>(s: &S) -> String {
    let fields: Vec<String> = S::CHANNELS
        .iter()
        .filter_map(|ch| {
            s.encode_channel(ch.index)
                .unwrap()
                .map(|v| format!("{}:{v}", ch.name))
        })
        .collect();
    format!("{{{}}}", fields.join(","))
}

fn updates<S: GraphState>(us: &[S::Update]) -> String {
    let items: Vec<String> = us
        .iter()
        .map(|u| S::encode_update(u).unwrap().to_string())
        .collect();
    format!("[{}]", items.join(","))
}

/// One event as one line.
fn render<S: GraphState>(
    norm: &mut Normalizer,
    thread: &str,
    previous: Option<&str>,
    event: &StreamEvent<S>,
) -> String {
    match event {
        StreamEvent::Values { step, values } => format!("values step={step} {}", state(values)),
        StreamEvent::Updates {
            step,
            node,
            updates: us,
            ..
        } => format!("updates step={step} node={node} {}", updates::<S>(us)),
        StreamEvent::TaskStart {
            step,
            id,
            node,
            input,
            triggers,
            ..
        } => format!(
            "task_start step={step} id={id} node={node} input={} triggers=[{}]",
            input
                .as_ref()
                .map_or_else(|| "-".to_string(), ToString::to_string),
            triggers.join(",")
        ),
        StreamEvent::TaskResult {
            step,
            id,
            node,
            error,
            result,
            interrupts,
            resumed,
            ..
        } => format!(
            "task_result step={step} id={id} node={node} error={} result={} interrupts={} resumed={resumed}",
            error.as_deref().unwrap_or("-"),
            updates::<S>(result),
            norm.interrupts(interrupts)
        ),
        StreamEvent::Checkpoint {
            config,
            parent_config,
            values,
            metadata,
            next,
        } => {
            let id = norm.config(thread, config);
            let parent = parent_config
                .as_ref()
                .map_or_else(|| "-".to_string(), |p| norm.config(thread, p));
            format!(
                "checkpoint {id} parent={parent} {} next=[{}] {}",
                norm.metadata(metadata),
                next.join(","),
                state(values)
            )
        }
        StreamEvent::Debug {
            step,
            timestamp,
            kind,
            event,
        } => {
            assert_timestamp(timestamp);
            let expected_kind = match &**event {
                StreamEvent::TaskStart { .. } => DebugKind::Task,
                StreamEvent::TaskResult { .. } => DebugKind::TaskResult,
                StreamEvent::Checkpoint { .. } => DebugKind::Checkpoint,
                other => panic!("debug wraps a {:?} event", other.mode()),
            };
            assert_eq!(*kind, expected_kind);
            let inner = render(norm, thread, None, event);
            // With every mode on, a debug event wraps the event right before it.
            let shown = if previous == Some(inner.as_str()) {
                "<previous>".to_string()
            } else {
                inner
            };
            format!("debug step={step} kind={kind:?} ts=<ts> {shown}")
        }
        StreamEvent::Message { step, node, chunk } => format!(
            "message step={step} node={node} {}",
            serde_json::to_string(chunk).unwrap_or_default()
        ),
        StreamEvent::Custom { node, value } => format!("custom node={node} {value}"),
        StreamEvent::Interrupt { interrupts } => {
            format!("interrupt {}", norm.interrupts(interrupts))
        }
        // These graphs have no subgraphs (see `subgraph_stream.rs`).
        StreamEvent::Subgraph { ns, event } => format!("subgraph {ns} {event}"),
        other => panic!(
            "a new kind of stream event ({:?}): give it a line here",
            other.mode()
        ),
    }
}

/// Drains a stream into lines; a failed run ends with an `error:` line.
async fn trace<S: GraphState>(
    norm: &mut Normalizer,
    thread: &str,
    mut stream: RunStream<S>,
    out: &mut String,
) {
    let mut previous: Option<String> = None;
    let mut ended = false;
    while let Some(item) = stream.next().await {
        assert!(!ended, "an item after the run's error");
        let line = match item {
            Ok(event) => render(norm, thread, previous.as_deref(), &event),
            Err(e) => {
                ended = true;
                format!("error: {e}")
            }
        };
        writeln!(out, "{line}").unwrap();
        previous = Some(line);
    }
}

fn golden_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("golden")
        .join(format!("{name}.trace"))
}

/// Compares `actual` with the stored trace, or stores it when `STATEGRAPH_BLESS=1`.
fn check_golden(name: &str, actual: &str) {
    let what = format!("trace `{name}`");
    stategraph_tests::golden::compare_or_bless(&golden_path(name), &what, actual);
}

fn saver() -> CompileOptions {
    CompileOptions::new().checkpointer(InMemorySaver::new())
}

async fn random_sleep() {
    let micros = rand::random_range(0..=2_000u64);
    tokio::time::sleep(Duration::from_micros(micros)).await;
}

// --- 1. linear chain ----------------------------------------------------------------

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Lin {
    #[reducer(append)]
    log: Vec<String>,
    last: String,
}

#[node]
fn first(_: &Lin) -> LinUpdate {
    Lin::update().log(["first"]).last("first")
}

#[node]
async fn second(_: &Lin, ctx: &NodeContext) -> Result<LinUpdate, NodeError> {
    ctx.emit(json!({ "progress": 1 })).await?;
    tokio::task::yield_now().await;
    ctx.emit(json!({ "progress": 2 })).await?;
    Ok(Lin::update().log(["second"]).last("second"))
}

/// Writes nothing: its updates event is empty.
#[node]
fn third(_: &Lin) -> Option<LinUpdate> {
    None
}

#[tokio::test]
async fn linear_chain_trace() {
    let graph = StateGraph::<Lin>::new()
        .add_node(third)
        .add_node(second)
        .add_node(first)
        .add_edge(START, first)
        .add_edge(first, second)
        .add_edge(second, third)
        .compile_with(saver())
        .unwrap();
    let cfg = RunConfig::new().thread("linear");
    let mut out = String::from(
        "# START -> first -> second (async, 2 custom events) -> third (writes nothing); every mode; InMemorySaver\n",
    );
    let mut norm = Normalizer::default();
    let input = Lin::update().log(["input"]);
    trace(
        &mut norm,
        "linear",
        graph.stream(input, &cfg, StreamMode::ALL),
        &mut out,
    )
    .await;
    check_golden("linear", &out);
}

// --- 2. fan-out with Send -----------------------------------------------------------

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Fan {
    items: Vec<u32>,
    #[reducer(append)]
    done: Vec<String>,
    #[reducer(add)]
    total: u32,
}

#[node]
fn plan(_: &Fan) -> FanUpdate {
    Fan::update().done(["plan"])
}

#[node]
async fn worker(n: &u32) -> FanUpdate {
    random_sleep().await;
    Fan::update().done([format!("w{n}")]).total(*n)
}

#[node]
fn summarize(s: &Fan) -> FanUpdate {
    Fan::update().done([format!("sum={}", s.total)])
}

fn fan_out() -> CompiledGraph<Fan> {
    StateGraph::<Fan>::new()
        .add_node(worker)
        .add_node(summarize)
        .add_node(plan)
        .add_edge(START, plan)
        .add_conditional_edges(
            plan,
            |s: &Fan| {
                Route::sends(
                    s.items
                        .iter()
                        .map(|&i| stategraph::Send::new(worker, i))
                        .collect::<Vec<_>>(),
                )
            },
            [worker],
        )
        .add_edge(worker, summarize)
        .compile_with(saver())
        .unwrap()
}

async fn fan_out_trace() -> String {
    let mut out = String::from(
        "# START -> plan =Send x5=> worker (async, random 0-2 ms sleeps) -> summarize; every mode; InMemorySaver\n",
    );
    let mut norm = Normalizer::default();
    let input = Fan::update().items(vec![3, 1, 4, 1, 5]);
    trace(
        &mut norm,
        "fan-out",
        fan_out().stream(input, &RunConfig::new().thread("fan-out"), StreamMode::ALL),
        &mut out,
    )
    .await;
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fan_out_with_send_trace_is_the_same_across_50_runs() {
    let baseline = fan_out_trace().await;
    check_golden("fan_out", &baseline);
    for run in 1..50 {
        let again = fan_out_trace().await;
        assert_eq!(again, baseline, "run {run} produced another trace");
    }
}

// --- 3. join across supersteps ------------------------------------------------------

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Jn {
    #[reducer(append)]
    log: Vec<String>,
}

#[node]
async fn a(_: &Jn, ctx: &NodeContext) -> JnUpdate {
    random_sleep().await;
    Jn::update().log([format!("a@{}", ctx.step())])
}

#[node]
fn b1(_: &Jn, ctx: &NodeContext) -> JnUpdate {
    Jn::update().log([format!("b1@{}", ctx.step())])
}

#[node]
async fn b2(_: &Jn, ctx: &NodeContext) -> JnUpdate {
    random_sleep().await;
    Jn::update().log([format!("b2@{}", ctx.step())])
}

#[node]
fn c(_: &Jn, ctx: &NodeContext) -> JnUpdate {
    Jn::update().log([format!("c@{}", ctx.step())])
}

async fn join_trace() -> String {
    let graph = StateGraph::<Jn>::new()
        .add_node(c)
        .add_node(b2)
        .add_node(b1)
        .add_node(a)
        .add_edge(START, a)
        .add_edge(START, b1)
        .add_edge(b1, b2)
        .add_edge([a, b2], c)
        .compile_with(saver())
        .unwrap();
    let mut out = String::from(
        "# START -> {a (async), b1}; b1 -> b2 (async); [a, b2] -> c (a in step 0, b2 in step 1); every mode; InMemorySaver\n",
    );
    let mut norm = Normalizer::default();
    trace(
        &mut norm,
        "join",
        graph.stream(
            Jn::update(),
            &RunConfig::new().thread("join"),
            StreamMode::ALL,
        ),
        &mut out,
    )
    .await;
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn join_trace_is_the_same_across_50_runs() {
    let baseline = join_trace().await;
    check_golden("join", &baseline);
    for run in 1..50 {
        assert_eq!(
            join_trace().await,
            baseline,
            "run {run} produced another trace"
        );
    }
}

// --- 4. interrupt and resume --------------------------------------------------------

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Doc {
    #[reducer(append)]
    log: Vec<String>,
    draft: String,
    approved: Option<bool>,
}

#[node]
fn write(_: &Doc) -> DocUpdate {
    Doc::update().log(["write"]).draft("v1")
}

/// Finishes in the step `review` pauses.
#[node]
fn notes(_: &Doc) -> DocUpdate {
    Doc::update().log(["notes"])
}

#[node]
async fn review(s: &Doc, ctx: &NodeContext) -> Result<DocUpdate, NodeError> {
    ctx.emit(json!({ "reviewing": s.draft })).await?;
    let ok: bool = ctx.interrupt(json!({ "draft": s.draft }))?;
    Ok(Doc::update()
        .log([format!("review:{ok}")])
        .approved(Some(ok)))
}

#[node]
fn publish(_: &Doc) -> DocUpdate {
    Doc::update().log(["publish"])
}

#[tokio::test]
async fn interrupt_then_resume_trace() {
    let graph = StateGraph::<Doc>::new()
        .add_node(write)
        .add_node(notes)
        .add_node(review)
        .add_node(publish)
        .add_edge(START, write)
        .add_edge(write, notes)
        .add_edge(write, review)
        .add_edge(notes, publish)
        .add_edge(review, publish)
        .compile_with(saver())
        .unwrap();
    let cfg = RunConfig::new().thread("interrupt");
    let mut out = String::from(
        "# START -> write -> {notes, review (emits, then interrupts)} -> publish; every mode; InMemorySaver\n# run 1: new input\n",
    );
    let mut norm = Normalizer::default();
    trace(
        &mut norm,
        "interrupt",
        graph.stream(Doc::update(), &cfg, StreamMode::ALL),
        &mut out,
    )
    .await;
    out.push_str("# run 2: Command::resume(true)\n");
    let resume: RunInput<Doc> = Command::resume(true).into();
    trace(
        &mut norm,
        "interrupt",
        graph.stream(resume, &cfg, StreamMode::ALL),
        &mut out,
    )
    .await;
    check_golden("interrupt", &out);
}

// --- 5. failure ---------------------------------------------------------------------

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Fail {
    #[reducer(append)]
    log: Vec<String>,
}

static BOOM_CALLS: AtomicUsize = AtomicUsize::new(0);

/// Fails on its first call (after yielding once), succeeds afterwards.
#[node]
async fn boom(_: &Fail) -> Result<FailUpdate, NodeError> {
    tokio::task::yield_now().await;
    if BOOM_CALLS.fetch_add(1, Ordering::SeqCst) == 0 {
        return Err(NodeError::msg("kaboom"));
    }
    Ok(Fail::update().log(["boom"]))
}

/// Sync: runs inline and finishes before `boom` fails.
#[node]
fn fine(_: &Fail) -> FailUpdate {
    Fail::update().log(["fine"])
}

/// Still sleeping when `boom` fails: cancelled.
#[node]
async fn slow(_: &Fail) -> FailUpdate {
    tokio::time::sleep(Duration::from_secs(10)).await;
    Fail::update().log(["slow"])
}

#[node]
fn after(_: &Fail) -> FailUpdate {
    Fail::update().log(["after"])
}

#[tokio::test(start_paused = true)]
async fn failure_then_continue_trace() {
    let graph = StateGraph::<Fail>::new()
        .add_node(boom)
        .add_node(fine)
        .add_node(slow)
        .add_node(after)
        .add_edge(START, boom)
        .add_edge(START, fine)
        .add_edge(START, slow)
        .add_edge([boom, fine, slow], after)
        .compile_with(saver())
        .unwrap();
    let cfg = RunConfig::new().thread("failure");
    let mut out = String::from(
        "# START -> {boom (fails once), fine (sync, finishes), slow (cancelled)} -> join -> after; every mode; InMemorySaver\n# run 1: new input\n",
    );
    let mut norm = Normalizer::default();
    trace(
        &mut norm,
        "failure",
        graph.stream(Fail::update(), &cfg, StreamMode::ALL),
        &mut out,
    )
    .await;
    let snap = graph.get_state(&cfg).await.unwrap().unwrap();
    writeln!(
        out,
        "# get_state: next=[{}] tasks=[{}] values={}",
        snap.next.join(","),
        snap.tasks
            .iter()
            .map(|t| format!(
                "{} error={} has_writes={}",
                t.id,
                t.error.as_deref().unwrap_or("-"),
                t.has_writes
            ))
            .collect::<Vec<_>>()
            .join(", "),
        state(&snap.values)
    )
    .unwrap();
    out.push_str("# run 2: continue (None)\n");
    trace(
        &mut norm,
        "failure",
        graph.stream(None, &cfg, StreamMode::ALL),
        &mut out,
    )
    .await;
    check_golden("failure", &out);
}
