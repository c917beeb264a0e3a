//! Stream events and generated updates serialize, so a run can be streamed over a
//! wire (server-sent events, a queue) without copying them into types of one's own,
//! and deserialize back to the same values.

use futures::StreamExt;
use serde_json::{Value, json};
use stategraph::checkpoint::InMemorySaver;
use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
struct Draft {
    topic: String,
    #[reducer(append)]
    notes: Vec<String>,
    #[reducer(add)]
    words: u32,
}

#[node]
async fn research(d: &Draft, ctx: &NodeContext) -> Result<DraftUpdate, NodeError> {
    ctx.emit(json!({"progress": 50})).await?;
    Ok(Draft::update()
        .notes([format!("about {}", d.topic)])
        .words(3u32))
}

#[node]
fn review(_: &Draft, ctx: &NodeContext) -> Result<DraftUpdate, NodeError> {
    let verdict: String = ctx.interrupt("approve?")?;
    Ok(Draft::update().notes([verdict]))
}

fn graph() -> CompiledGraph<Draft> {
    StateGraph::<Draft>::new()
        .add_node(research)
        .add_node(review)
        .add_edge(START, research)
        .add_edge(research, review)
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .expect("compiles")
}

async fn events(
    g: &CompiledGraph<Draft>,
    input: impl Into<stategraph::RunInput<Draft>>,
    config: &RunConfig,
) -> Vec<StreamEvent<Draft>> {
    g.stream(input, config, StreamMode::ALL)
        .map(|e| e.expect("the run succeeds"))
        .collect()
        .await
}

#[tokio::test]
async fn every_event_of_a_run_round_trips_through_json() {
    let g = graph();
    let config = RunConfig::new().thread("wire");
    let mut all = events(&g, Draft::update().topic("rust"), &config).await;
    all.extend(events(&g, Command::resume("yes"), &config).await);

    let mut kinds = Vec::new();
    for event in &all {
        let wire = serde_json::to_string(event).expect("an event serializes");
        let back: StreamEvent<Draft> = serde_json::from_str(&wire).expect("and deserializes");
        // The same JSON again: nothing was lost or changed on the way.
        assert_eq!(
            serde_json::to_string(&back).expect("serializes again"),
            wire
        );
        let value: Value = serde_json::from_str(&wire).expect("JSON");
        kinds.push(
            value["type"]
                .as_str()
                .expect("tagged by `type`")
                .to_string(),
        );
    }
    for kind in [
        "values",
        "updates",
        "task_start",
        "task_result",
        "checkpoint",
        "debug",
        "custom",
        "interrupt",
    ] {
        assert!(
            kinds.iter().any(|k| k == kind),
            "no `{kind}` event in {kinds:?}"
        );
    }
}

#[tokio::test]
async fn events_read_as_a_client_expects() {
    let g = graph();
    let config = RunConfig::new().thread("shape");
    let all = events(&g, Draft::update().topic("serde"), &config).await;
    let json: Vec<Value> = all
        .iter()
        .map(|e| serde_json::to_value(e).expect("serializes"))
        .collect();

    let update = json
        .iter()
        .find(|e| e["type"] == "updates" && e["node"] == "research")
        .expect("research's updates");
    assert_eq!(update["step"], 0);
    assert_eq!(update["cached"], false);
    let written: DraftUpdate =
        serde_json::from_value(update["updates"][0].clone()).expect("an update deserializes");
    assert_eq!(
        serde_json::to_value(&written).expect("serializes"),
        serde_json::to_value(Draft::update().notes(["about serde"]).words(3u32))
            .expect("serializes")
    );

    let custom = json.iter().find(|e| e["type"] == "custom").expect("custom");
    assert_eq!(custom["node"], "research");
    assert_eq!(custom["value"], json!({"progress": 50}));

    let paused = json
        .iter()
        .find(|e| e["type"] == "interrupt")
        .expect("interrupt");
    assert_eq!(paused["interrupts"][0]["node"], "review");
    assert_eq!(paused["interrupts"][0]["value"], "approve?");

    let debug = json.iter().find(|e| e["type"] == "debug").expect("debug");
    assert!(
        debug["event"]["type"].is_string(),
        "a debug event wraps a tagged event"
    );
    assert!(["task", "task_result", "checkpoint"].contains(&debug["kind"].as_str().unwrap_or("")));

    let values = json
        .iter()
        .rev()
        .find(|e| e["type"] == "values")
        .expect("values");
    let state: Draft = serde_json::from_value(values["values"].clone()).expect("the state");
    assert_eq!(state.notes, ["about serde"]);
}

#[test]
fn a_bad_update_is_a_deserialization_error_naming_the_channel() {
    let err = serde_json::from_value::<DraftUpdate>(json!({"nope": 1}))
        .expect_err("an unknown channel is refused");
    assert!(err.to_string().contains("nope"), "{err}");
    let err = serde_json::from_str::<StreamEvent<Draft>>(r#"{"type":"teleport"}"#)
        .expect_err("an unknown event type is refused");
    assert!(err.to_string().contains("teleport"), "{err}");
}
