//! Threads with subgraphs: `namespaces` lists a thread's checkpoint namespaces (the
//! root graph's and each subgraph task's), and `--ns` reads a child's checkpoints with
//! `history`, `show` and `diff`.

use crate::common;

use common::Fixture;
use serde_json::json;
use stategraph::prelude::*;
use stategraph_sqlite::SqliteSaver;

#[derive(GraphState, Clone, Debug, Default)]
struct Desk {
    question: String,
    #[reducer(append)]
    answers: Vec<String>,
}

#[derive(GraphState, Clone, Debug, Default)]
struct Research {
    topic: String,
    #[reducer(append)]
    notes: Vec<String>,
}

#[node]
fn search(r: &Research) -> ResearchUpdate {
    Research::update().notes([format!("found {}", r.topic)])
}

#[node]
fn check(r: &Research, ctx: &NodeContext) -> Result<ResearchUpdate, NodeError> {
    let ok: bool = ctx.interrupt(json!({ "check": r.notes }))?;
    Ok(Research::update().notes([format!("checked: {ok}")]))
}

/// A desk thread paused inside its research subgraph, in a new SQLite file.
async fn paused_desk() -> (Fixture, String) {
    let fixture = Fixture::tickets().await;
    let research = StateGraph::<Research>::new()
        .add_node(search)
        .add_node(check)
        .add_edge(START, search)
        .add_edge(search, check)
        .compile()
        .unwrap();
    let mut desk = StateGraph::<Desk>::new();
    let sub = desk.add_subgraph(Subgraph::new(
        "research",
        research,
        |d: &Desk| Research::update().topic(d.question.clone()),
        |r: &Research| Desk::update().answers(r.notes.clone()),
    ));
    desk.add_edge(START, &sub);
    let desk = desk
        .compile_with(CompileOptions::new().checkpointer(SqliteSaver::open(&fixture.db).unwrap()))
        .unwrap();
    let paused = desk
        .invoke(
            Desk::update().question("eels"),
            &RunConfig::new().thread("desk"),
        )
        .await
        .unwrap();
    let ns = paused.interrupts[0].ns.clone();
    (fixture, ns)
}

#[tokio::test]
async fn namespaces_lists_the_root_and_each_subgraph_task() {
    let (f, ns) = paused_desk().await;
    let json = f.run(&["namespaces", "desk", "--json"]).json();
    let listed = json["namespaces"].as_array().unwrap();
    assert_eq!(listed.len(), 2, "{json}");
    assert_eq!(listed[0]["ns"], json!(""));
    // The parent's subgraph task waits on the child's interrupt.
    assert_eq!(listed[0]["status"], json!("interrupted"));
    assert_eq!(listed[1]["ns"], json!(ns));
    assert_eq!(listed[1]["status"], json!("interrupted"));
    assert_eq!(
        listed[1]["checkpoints"],
        json!(2),
        "input, then search's step"
    );

    let table = f.run(&["namespaces", "desk"]).ok().to_string();
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].contains("desk: 2 namespaces"), "{table}");
    assert!(lines[1].starts_with("NAMESPACE"), "{table}");
    assert!(lines[2].starts_with("(root)"), "{table}");
    assert!(lines[3].starts_with(&ns), "{table}");
    assert!(lines[3].contains("interrupted"), "{table}");

    let missing = f.run(&["namespaces", "nobody"]).fails(5).to_string();
    assert!(missing.contains("nobody"), "{missing}");
}

#[tokio::test]
async fn ns_reads_a_child_s_checkpoints() {
    let (f, ns) = paused_desk().await;
    let history = f.run(&["--ns", &ns, "history", "desk", "--json"]).json();
    let steps: Vec<i64> = history["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["step"].as_i64().unwrap())
        .collect();
    assert_eq!(steps, [0, -1], "{history}");

    let shown = f.run(&["--ns", &ns, "show", "desk", "--json"]).json();
    assert_eq!(shown["values"]["topic"], json!("eels"));
    assert_eq!(shown["values"]["notes"], json!(["found eels"]));
    assert_eq!(shown["next"], json!([{ "node": "check" }]));
    let text = f.run(&["--ns", &ns, "show", "desk"]).ok().to_string();
    assert!(text.contains("found eels"), "{text}");

    // The root namespace is the parent's own: no `topic` there.
    let root = f.run(&["show", "desk", "--json"]).json();
    assert_eq!(root["values"]["question"], json!("eels"));
    assert!(root["values"].get("topic").is_none(), "{root}");

    let diff = f
        .run(&["--ns", &ns, "diff", "desk", "@-1", "@0", "--json"])
        .json();
    let changed = diff.to_string();
    assert!(changed.contains("found eels"), "{changed}");

    let unknown = f
        .run(&["--ns", "research:ffffffffffffffff", "history", "desk"])
        .fails(5)
        .to_string();
    assert!(unknown.contains("no checkpoints in namespace"), "{unknown}");
    assert!(unknown.contains("stategraph namespaces desk"), "{unknown}");
}
