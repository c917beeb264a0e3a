//! A tool-calling agent served over HTTP: its model's reply streamed piece by piece
//! in LangGraph's `messages-tuple` and `messages` forms.

use crate::common;

use common::Harness;
use serde_json::{Value, json};
use stategraph::prelude::*;
use stategraph_agent::{ScriptedModel, Tools, react_agent};

fn agent() -> StateGraph<stategraph_agent::MessagesState> {
    let model =
        ScriptedModel::new([Message::assistant("Rain in Oslo, take a jacket.")]).piece_size(5);
    react_agent(model, Tools::new())
        .build()
        .expect("the agent graph")
}

async fn stream(h: &Harness, modes: Value) -> Vec<(String, Value)> {
    let t = h.thread().await;
    let r = h
        .http
        .post(h.url(&format!("/threads/{t}/runs/stream")))
        .json(&json!({ "assistant_id": "agent",
                        "input": { "messages": [{ "type": "human", "content": "Weather?" }] },
                        "stream_mode": modes }))
        .send()
        .await
        .expect("a response");
    assert_eq!(r.status(), 200);
    h.sse(r).await.into_iter().map(|(e, d, _)| (e, d)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_tuple_streams_each_piece_with_its_node_and_step() {
    let h = Harness::start_with(|s| s.graph("agent", agent())).await;
    let all = stream(&h, json!(["messages-tuple", "values"])).await;
    let pieces: Vec<&Value> = all
        .iter()
        .filter(|(e, _)| e == "messages")
        .map(|(_, d)| d)
        .collect();
    assert_eq!(pieces.len(), 6, "{all:?}");
    let text: String = pieces
        .iter()
        .map(|p| p[0]["content"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Rain in Oslo, take a jacket.");
    for p in &pieces {
        assert_eq!(p[0]["type"], "AIMessageChunk");
        assert_eq!(p[0]["id"], pieces[0][0]["id"]);
        assert_eq!(p[1]["langgraph_node"], "agent");
        assert_eq!(p[1]["langgraph_step"], 0);
    }
    // The stored reply is the pieces joined, under the same id.
    let last = all.iter().rev().find(|(e, _)| e == "values").unwrap();
    let reply = &last.1["messages"][1];
    assert_eq!(reply["content"], text);
    assert_eq!(reply["id"], pieces[0][0]["id"]);
    assert_eq!(reply["type"], "ai");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_sends_metadata_once_then_the_message_so_far() {
    let h = Harness::start_with(|s| s.graph("agent", agent())).await;
    let all = stream(&h, json!("messages")).await;
    let names: Vec<&str> = all.iter().map(|(e, _)| e.as_str()).collect();
    assert_eq!(names[0], "metadata");
    assert_eq!(names[1], "messages/metadata");
    assert_eq!(
        names.iter().filter(|n| **n == "messages/metadata").count(),
        1
    );
    let partial: Vec<&str> = all
        .iter()
        .filter(|(e, _)| e == "messages/partial")
        .map(|(_, d)| d[0]["content"].as_str().unwrap())
        .collect();
    assert_eq!(partial.len(), 6);
    assert_eq!(partial[0], "Rain ");
    assert_eq!(partial[1], "Rain in Os");
    assert_eq!(*partial.last().unwrap(), "Rain in Oslo, take a jacket.");
    assert_eq!(*names.last().unwrap(), "end");
}
