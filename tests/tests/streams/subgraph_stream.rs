//! Streaming with subgraphs: `StreamMode::SUBGRAPHS` adds the events of every
//! subgraph's run (at any depth), tagged with its namespace, in the modes the parent
//! streams; without it the stream holds the parent's events only. The order is fixed:
//! a golden trace with nested namespaces (digests replaced by `<task>`).

use std::fmt::Write as _;
use std::path::PathBuf;

use futures::StreamExt;
use serde_json::json;
use stategraph::RunInput;
use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Desk {
    question: String,
    #[reducer(append)]
    answers: Vec<String>,
}

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Research {
    topic: String,
    #[reducer(append)]
    notes: Vec<String>,
}

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Review {
    draft: String,
    verdict: String,
}

#[node]
async fn gather(r: &Research, ctx: &NodeContext) -> Result<ResearchUpdate, NodeError> {
    ctx.emit(json!({ "gathering": r.topic })).await?;
    Ok(Research::update().notes([format!("facts on {}", r.topic)]))
}

#[node]
fn judge(r: &Review, ctx: &NodeContext) -> Result<ReviewUpdate, NodeError> {
    let verdict: String = ctx.interrupt(json!({ "draft": r.draft }))?;
    Ok(Review::update().verdict(verdict))
}

#[node]
fn intake(d: &Desk) -> DeskUpdate {
    Desk::update().answers([format!("asked: {}", d.question)])
}

fn graph() -> CompiledGraph<Desk> {
    let review = StateGraph::<Review>::new()
        .add_node(judge)
        .add_edge(START, judge)
        .compile()
        .unwrap();
    let mut research = StateGraph::<Research>::new();
    let check = research.add_subgraph(Subgraph::new(
        "review",
        review,
        |r: &Research| Review::update().draft(r.notes.join("; ")),
        |v: &Review| Research::update().notes([format!("verdict: {}", v.verdict)]),
    ));
    research
        .add_node(gather)
        .add_edge(START, gather)
        .add_edge(gather, &check);
    let research = research.compile().unwrap();
    let mut desk = StateGraph::<Desk>::new();
    let sub = desk.add_subgraph(Subgraph::new(
        "research",
        research,
        |d: &Desk| Research::update().topic(d.question.clone()),
        |r: &Research| Desk::update().answers(r.notes.clone()),
    ));
    desk.add_node(intake)
        .add_edge(START, intake)
        .add_edge(intake, &sub);
    desk.compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap()
}

/// `research:0123456789abcdef|review:..` → `research:<task>|review:<task>`.
fn masked(ns: &str) -> String {
    ns.split('|')
        .map(|seg| match seg.split_once(':') {
            Some((node, digest)) if digest.len() == 16 => format!("{node}:<task>"),
            _ => seg.to_string(),
        })
        .collect::<Vec<_>>()
        .join("|")
}

async fn trace(
    g: &CompiledGraph<Desk>,
    input: impl Into<RunInput<Desk>>,
    config: &RunConfig,
    modes: StreamMode,
) -> String {
    let mut out = String::new();
    let mut events = g.stream(input, config, modes);
    while let Some(event) = events.next().await {
        let line = match event.unwrap() {
            StreamEvent::Values { step, values } => {
                format!("values step={step} {:?}", values.answers)
            }
            StreamEvent::Updates { step, node, .. } => format!("updates step={step} {node}"),
            StreamEvent::Custom { node, value } => format!("custom {node} {value}"),
            StreamEvent::Interrupt { interrupts } => format!(
                "interrupt {} at {} in {}",
                interrupts[0].value,
                interrupts[0].node,
                masked(&interrupts[0].ns)
            ),
            StreamEvent::Subgraph { ns, mut event } => {
                if let Some(i) = event.get_mut("interrupts") {
                    for i in i.as_array_mut().into_iter().flatten() {
                        if let Some(ns) = i.get("ns").and_then(|v| v.as_str()).map(masked) {
                            i["ns"] = json!(ns);
                        }
                        i["id"] = json!("<id>");
                    }
                }
                format!("  [{}] {event}", masked(&ns))
            }
            other => format!("other {:?}", other.mode()),
        };
        writeln!(out, "{line}").unwrap();
    }
    out
}

fn golden(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("golden")
        .join(format!("{name}.trace"))
}

#[tokio::test]
async fn subgraph_events_stream_with_their_namespaces_in_a_fixed_order() {
    let g = graph();
    let modes =
        StreamMode::VALUES | StreamMode::UPDATES | StreamMode::CUSTOM | StreamMode::SUBGRAPHS;
    let config = RunConfig::new().thread("streamed");
    let mut actual = trace(&g, Desk::update().question("tides"), &config, modes).await;
    actual.push_str("-- resume\n");
    actual.push_str(&trace(&g, Command::resume("fine"), &config, modes).await);
    stategraph_tests::golden::compare_or_bless(&golden("subgraphs"), "trace `subgraphs`", &actual);

    // The same run again gives the same trace.
    let again = graph();
    let config = RunConfig::new().thread("streamed-again");
    let mut second = trace(&again, Desk::update().question("tides"), &config, modes).await;
    second.push_str("-- resume\n");
    second.push_str(&trace(&again, Command::resume("fine"), &config, modes).await);
    assert_eq!(second, actual);
}

#[tokio::test]
async fn without_subgraphs_the_stream_holds_the_parent_s_events_only() {
    let g = graph();
    let config = RunConfig::new().thread("flat");
    let modes = StreamMode::VALUES | StreamMode::UPDATES | StreamMode::CUSTOM;
    let out = trace(&g, Desk::update().question("tides"), &config, modes).await;
    assert!(!out.contains("  ["), "{out}");
    assert!(out.contains("updates step=0 intake"), "{out}");
    assert!(
        out.ends_with(
            "interrupt {\"draft\":\"facts on tides\"} at judge in research:<task>|review:<task>\n"
        ),
        "{out}"
    );
    let done = trace(&g, Command::resume("ok"), &config, modes).await;
    assert!(done.contains("updates step=1 research"), "{done}");
}

// --- parallel subgraph tasks stream in task order -----------------------------------------

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Batch {
    topics: Vec<String>,
    #[reducer(append)]
    answers: Vec<String>,
}

/// Slower for earlier topics, so the children end in the reverse of task order.
#[node]
async fn dig(r: &Research, ctx: &NodeContext) -> Result<ResearchUpdate, NodeError> {
    ctx.emit(json!({ "start": r.topic })).await?;
    let wait = match r.topic.as_str() {
        "a" => 60,
        "b" => 30,
        _ => 1,
    };
    tokio::time::sleep(std::time::Duration::from_millis(wait)).await;
    ctx.emit(json!({ "end": r.topic })).await?;
    Ok(Research::update().notes([format!("dug {}", r.topic)]))
}

fn batch() -> CompiledGraph<Batch> {
    let child = StateGraph::<Research>::new()
        .add_node(dig)
        .add_edge(START, dig)
        .compile()
        .unwrap();
    let mut g = StateGraph::<Batch>::new();
    let research = g.add_subgraph(Subgraph::new(
        "research",
        child,
        |_: &Batch| Research::update(),
        |r: &Research| Batch::update().answers(r.notes.clone()),
    ));
    let fan = research.clone();
    g.add_conditional_edges(
        START,
        move |b: &Batch| {
            Route::sends(
                b.topics
                    .iter()
                    .map(|t| stategraph::Send::new(&fan, Research::update().topic(t.clone()))),
            )
        },
        [&research],
    );
    g.compile().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_of_parallel_subgraphs_come_in_task_order_whatever_ends_first() {
    let modes = StreamMode::CUSTOM | StreamMode::SUBGRAPHS;
    let mut traces = Vec::new();
    for _ in 0..3 {
        let g = batch();
        let topics = vec!["a".to_string(), "b".to_string(), "c".to_string()];
        let mut events = g.stream(Batch::update().topics(topics), &RunConfig::new(), modes);
        let mut seen = Vec::new();
        while let Some(event) = events.next().await {
            if let StreamEvent::Subgraph { event, .. } = event.unwrap()
                && event["type"] == "custom"
            {
                seen.push(event["value"].to_string());
            }
        }
        traces.push(seen);
    }
    let expected: Vec<String> = ["a", "b", "c"]
        .iter()
        .flat_map(|t| {
            [
                json!({ "start": t }).to_string(),
                json!({ "end": t }).to_string(),
            ]
        })
        .collect();
    for trace in &traces {
        assert_eq!(*trace, expected);
    }
}

#[tokio::test]
async fn every_mode_of_the_parent_streams_from_its_children() {
    let g = graph();
    let config = RunConfig::new().thread("every-mode");
    let mut events = g.stream(
        Desk::update().question("tides"),
        &config,
        StreamMode::ALL | StreamMode::SUBGRAPHS,
    );
    let mut types = std::collections::BTreeSet::new();
    let mut debug_kinds = std::collections::BTreeSet::new();
    while let Some(event) = events.next().await {
        if let StreamEvent::Subgraph { ns, event } = event.unwrap() {
            assert!(ns.starts_with("research:"), "{ns}");
            let kind = event["type"].as_str().unwrap().to_string();
            if kind == "debug" {
                debug_kinds.insert(event["kind"].to_string());
            }
            if kind == "checkpoint" {
                assert_eq!(event["config"]["checkpoint_ns"], json!(ns), "{event}");
            }
            types.insert(kind);
        }
    }
    let expected = [
        "checkpoint",
        "custom",
        "debug",
        "interrupt",
        "task_result",
        "task_start",
        "updates",
        "values",
    ];
    assert_eq!(
        types.iter().map(String::as_str).collect::<Vec<_>>(),
        expected
    );
    assert!(debug_kinds.len() >= 2, "{debug_kinds:?}");
}
