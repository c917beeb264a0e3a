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
    // Six pieces of text, then an empty one ending the reply, as a model's stream
    // ends: `finish_reason` in its `response_metadata`.
    assert_eq!(pieces.len(), 7, "{all:?}");
    let last = pieces.last().unwrap();
    assert_eq!(last[0]["content"], "");
    assert_eq!(last[0]["response_metadata"]["finish_reason"], "stop");
    assert!(
        pieces[..6]
            .iter()
            .all(|p| p[0]["response_metadata"] == json!({}))
    );
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

/// The weather in a city.
#[stategraph_agent::tool]
fn weather(city: String) -> String {
    format!("rain in {city}")
}

fn tool_agent() -> StateGraph<stategraph_agent::MessagesState> {
    let call = stategraph::ToolCall {
        id: "call-1".into(),
        name: "weather".into(),
        arguments: json!({ "city": "Oslo" }),
    };
    let model = ScriptedModel::new([
        Message::assistant("").with_tool_calls([call]),
        Message::assistant("Rain in Oslo."),
    ]);
    react_agent(model, Tools::new().with(weather))
        .build()
        .expect("the agent graph")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_go_out_in_langchains_shape_and_come_in_in_every_form_it_sends() {
    let h = Harness::start_with(|s| s.graph("agent", tool_agent())).await;
    let t = h.thread().await;
    // Content as a list of text blocks, as agent-chat-ui sends it.
    let human = json!({ "type": "human", "id": "h1", "additional_kwargs": {},
                        "content": [{ "type": "text", "text": "Weather " }, { "type": "text", "text": "in Oslo?" }] });
    let r = h
        .http
        .post(h.url(&format!("/threads/{t}/runs/stream")))
        .json(
            &json!({ "assistant_id": "agent", "input": { "messages": [human] },
                        "stream_mode": ["values", "updates"] }),
        )
        .send()
        .await
        .unwrap();
    let all: Vec<(String, Value)> = h.sse(r).await.into_iter().map(|(e, d, _)| (e, d)).collect();
    let text = serde_json::to_string(&all).unwrap();
    assert!(
        !text.contains("upsert") && !text.contains("\"role\""),
        "{text}"
    );
    // A node's update is the messages it wrote.
    let agent_update = all
        .iter()
        .find(|(e, d)| e == "updates" && d.get("agent").is_some())
        .map(|(_, d)| &d["agent"]["messages"][0])
        .expect("the agent's update");
    assert_eq!(agent_update["type"], "ai", "{agent_update}");
    assert_eq!(
        agent_update["tool_calls"],
        json!([{ "id": "call-1", "name": "weather", "args": { "city": "Oslo" }, "type": "tool_call" }])
    );
    let values = &all.iter().rev().find(|(e, _)| e == "values").unwrap().1;
    let m = values["messages"].as_array().unwrap();
    let kinds: Vec<&str> = m.iter().map(|x| x["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["human", "ai", "tool", "ai"], "{values}");
    assert_eq!(
        (m[0]["content"].as_str(), m[0]["id"].as_str()),
        (Some("Weather in Oslo?"), Some("h1"))
    );
    assert_eq!(m[1]["response_metadata"]["finish_reason"], "tool_calls");
    assert_eq!(m[1]["invalid_tool_calls"], json!([]));
    assert_eq!(
        (
            m[2]["tool_call_id"].as_str(),
            m[2]["content"].as_str(),
            m[2]["status"].as_str()
        ),
        (Some("call-1"), Some("rain in Oslo"), Some("success"))
    );
    assert_eq!(m[3]["response_metadata"]["finish_reason"], "stop");
    assert_eq!(m[3]["additional_kwargs"], json!({}));

    // LangChain's `RemoveMessage` removes by id, in an update as in a run's input.
    let (s, out) = h
        .post(
            &format!("/threads/{t}/state"),
            json!({ "values": { "messages": [{ "type": "remove", "id": "h1" }] } }),
        )
        .await;
    assert_eq!(s, 200, "{out}");
    let (_, state) = h.get(&format!("/threads/{t}/state")).await;
    let left: Vec<&str> = state["values"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["type"].as_str().unwrap())
        .collect();
    assert_eq!(left, ["ai", "tool", "ai"], "{state}");
    // An image block is not text `stategraph::Message` can hold: a 422 naming it,
    // nothing written.
    let image = json!({ "type": "human",
                        "content": [{ "type": "image_url", "image_url": { "url": "data:," } }] });
    let (s, err) = h
        .post(
            &format!("/threads/{t}/state"),
            json!({ "values": { "messages": [image] } }),
        )
        .await;
    assert_eq!(s, 422, "{err}");
    assert!(
        err["errors"][0]["path"]
            .as_str()
            .unwrap()
            .starts_with("$.values.messages"),
        "{err}"
    );
    let (_, after) = h.get(&format!("/threads/{t}/state")).await;
    assert_eq!(after["values"], state["values"]);
}

/// `events`: the run as LangChain's `astream_events` v2 sees it — what CopilotKit's
/// AG-UI adapter reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_mode_shows_chains_model_replies_and_tools_as_astream_events_does() {
    let h = Harness::start_with(|s| s.graph("agent", tool_agent())).await;
    let t = h.thread().await;
    let r = h
        .http
        .post(h.url(&format!("/threads/{t}/runs/stream")))
        .json(
            &json!({ "assistant_id": "agent", "input": { "messages": "Weather in Oslo?" },
                        "stream_mode": ["events", "messages-tuple"] }),
        )
        .send()
        .await
        .unwrap();
    let all: Vec<(String, Value)> = h.sse(r).await.into_iter().map(|(e, d, _)| (e, d)).collect();
    let run_id = all[0].1["run_id"].as_str().unwrap().to_string();
    let events: Vec<&Value> = all
        .iter()
        .filter(|(e, _)| e == "events")
        .map(|(_, d)| d)
        .collect();
    let names: Vec<String> = events
        .iter()
        .map(|e| {
            format!(
                "{} {}",
                e["event"].as_str().unwrap(),
                e["name"].as_str().unwrap()
            )
        })
        .filter(|n| !n.starts_with("on_chat_model_stream"))
        .collect();
    assert_eq!(
        names,
        [
            "on_chain_start agent",
            "on_chain_start agent",
            "on_chat_model_start model",
            "on_chat_model_end model",
            "on_chain_end agent",
            "on_chain_start tools",
            "on_tool_start weather",
            "on_tool_end weather",
            "on_chain_end tools",
            "on_chain_start agent",
            "on_chat_model_start model",
            "on_chat_model_end model",
            "on_chain_end agent",
            "on_chain_end agent",
        ],
        "{events:?}"
    );
    for e in &events {
        assert_eq!(e["metadata"]["run_id"], json!(run_id), "{e}");
        assert_eq!(e["metadata"]["thread_id"], json!(t), "{e}");
    }
    // The graph's own start and end carry its run id, input and final values.
    assert_eq!(events[0]["run_id"], json!(run_id));
    assert_eq!(
        events[0]["data"]["input"]["messages"],
        json!("Weather in Oslo?")
    );
    let last = events.last().unwrap();
    assert_eq!(
        last["data"]["output"]["messages"].as_array().map(Vec::len),
        Some(4)
    );
    // A task's events name its node and step; its end carries its update.
    assert_eq!(events[1]["metadata"]["langgraph_node"], "agent");
    assert_eq!(events[1]["tags"], json!(["graph:step:0"]));
    let agent_end = events
        .iter()
        .find(|e| e["event"] == "on_chain_end" && e["name"] == "agent")
        .unwrap();
    assert_eq!(
        agent_end["data"]["output"]["messages"][0]["tool_calls"][0]["name"],
        "weather"
    );
    // The tool's input is the call's arguments; its output the ToolMessage, named.
    let tool_end = events.iter().find(|e| e["event"] == "on_tool_end").unwrap();
    assert_eq!(tool_end["data"]["input"], json!({ "city": "Oslo" }));
    assert_eq!(
        (
            tool_end["data"]["output"]["type"].as_str(),
            tool_end["data"]["output"]["name"].as_str()
        ),
        (Some("tool"), Some("weather"))
    );
    // The answer, piece by piece, in `on_chat_model_stream`; whole in `_end`.
    let streamed: String = events
        .iter()
        .filter(|e| e["event"] == "on_chat_model_stream")
        .filter_map(|e| e["data"]["chunk"]["content"].as_str())
        .collect();
    assert_eq!(streamed, "Rain in Oslo.");
    let model_end = events
        .iter()
        .rev()
        .find(|e| e["event"] == "on_chat_model_end")
        .unwrap();
    assert_eq!(model_end["data"]["output"]["content"], "Rain in Oslo.");
    // Each piece comes in `events` before `messages`; each reply's last piece in
    // `messages` carries its finish reason.
    let kinds: Vec<&str> = all.iter().map(|(e, _)| e.as_str()).collect();
    let first_stream = all
        .iter()
        .position(|(e, d)| e == "events" && d["event"] == "on_chat_model_stream")
        .unwrap();
    assert_eq!(kinds[first_stream + 1], "messages", "{kinds:?}");
    let reasons: Vec<&str> = all
        .iter()
        .filter(|(e, _)| e == "messages")
        .filter_map(|(_, d)| d[0]["response_metadata"]["finish_reason"].as_str())
        .collect();
    assert_eq!(reasons, ["tool_calls", "stop"]);
}
