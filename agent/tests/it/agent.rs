//! The toolkit in graphs: ToolNode (concurrent calls, errors the model can read),
//! the ReAct agent loop, approval with edited arguments, and token streaming.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use stategraph::prelude::*;
use stategraph::{BoxFuture, MessageBuilder, MessageChunk};
use stategraph_agent::{
    MessagesState, Review, ScriptedModel, Tool, ToolError, ToolNode, ToolSpec, Tools, react_agent,
};

/// A tool recording its arguments; waits on `gate` (if any) before answering.
#[derive(Clone)]
struct Probe {
    name: &'static str,
    seen: Arc<Mutex<Vec<Value>>>,
    gate: Option<Arc<tokio::sync::Barrier>>,
    fail: bool,
}

impl Probe {
    fn new(name: &'static str) -> Self {
        Self {
            name,
            seen: Arc::default(),
            gate: None,
            fail: false,
        }
    }
    fn seen(&self) -> Vec<Value> {
        self.seen.lock().unwrap().clone()
    }
}

impl Tool for Probe {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name.into(),
            description: format!("The {} probe.", self.name),
            parameters: json!({
                "type": "object",
                "properties": { "city": { "type": "string" } },
                "required": ["city"],
            }),
        }
    }

    fn call(&self, arguments: Value) -> BoxFuture<'_, Result<String, ToolError>> {
        Box::pin(async move {
            self.seen.lock().unwrap().push(arguments.clone());
            if let Some(gate) = &self.gate {
                gate.wait().await;
            }
            let Some(city) = arguments["city"].as_str() else {
                return Err(ToolError::BadArguments {
                    tool: self.name.into(),
                    message: "missing field `city`".into(),
                });
            };
            if self.fail {
                return Err(ToolError::Failed {
                    tool: self.name.into(),
                    message: format!("{city} is offline"),
                });
            }
            Ok(format!("{}: {city}", self.name))
        })
    }
}

fn call(id: &str, name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments,
    }
}

fn asks(calls: Vec<ToolCall>) -> Message {
    Message::assistant("Let me check.").with_tool_calls(calls)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_node_runs_the_calls_at_once_and_answers_each_in_order() {
    // Both calls wait for each other: run one after the other, they never finish.
    let gate = Arc::new(tokio::sync::Barrier::new(2));
    let weather = Probe {
        gate: Some(gate.clone()),
        ..Probe::new("weather")
    };
    let traffic = Probe {
        gate: Some(gate),
        ..Probe::new("traffic")
    };
    let node = ToolNode::new(Tools::new().with(weather).with(traffic));
    let messages = [
        Message::user("Oslo?"),
        asks(vec![
            call("c1", "traffic", json!({ "city": "Oslo" })),
            call("c2", "weather", json!({ "city": "Bergen" })),
        ]),
    ];
    let answers = tokio::time::timeout(Duration::from_secs(5), node.answer(&messages))
        .await
        .expect("the calls ran concurrently");
    let got: Vec<_> = answers
        .iter()
        .map(|m| (m.role, m.tool_call_id.clone().unwrap(), m.content.clone()))
        .collect();
    assert_eq!(
        got,
        [
            (Role::Tool, "c1".to_string(), "traffic: Oslo".to_string()),
            (Role::Tool, "c2".to_string(), "weather: Bergen".to_string()),
        ]
    );
}

#[tokio::test]
async fn failed_calls_become_error_messages_the_model_reads_and_the_run_goes_on() {
    let broken = Probe {
        fail: true,
        ..Probe::new("broken")
    };
    let model = ScriptedModel::new([
        asks(vec![
            call("c1", "weather", json!({ "town": "Oslo" })),
            call("c2", "nowhere", json!({})),
            call("c3", "broken", json!({ "city": "Tromsø" })),
        ]),
        Message::assistant("Sorry, the tools failed."),
    ]);
    let tools = Tools::new().with(Probe::new("weather")).with(broken);
    let graph = react_agent(model.clone(), tools)
        .build()
        .unwrap()
        .compile()
        .unwrap();
    let out = graph
        .invoke(
            MessagesState::update().messages([Message::user("Weather?")]),
            &RunConfig::new(),
        )
        .await
        .expect("tool errors do not fail the run");
    let answers: Vec<&str> = out.values.messages[2..5]
        .iter()
        .map(|m| m.content.as_str())
        .collect();
    assert!(
        answers[0].starts_with("Error: invalid arguments for tool `weather`: missing field `city`"),
        "{answers:?}"
    );
    assert!(
        answers[1]
            .starts_with("Error: there is no tool named `nowhere`; the tools are: broken, weather"),
        "{answers:?}"
    );
    assert_eq!(answers[2], "Error: tool `broken` failed: Tromsø is offline");
    // The model's second call saw those error messages.
    let second = &model.requests()[1];
    assert_eq!(second.messages.len(), 5);
    assert!(second.messages[4].content.contains("offline"));
    assert_eq!(
        out.values.messages.last().unwrap().content,
        "Sorry, the tools failed."
    );
}

#[tokio::test]
async fn the_agent_loops_until_the_model_answers_and_offers_it_the_tools() {
    let weather = Probe::new("weather");
    let model = ScriptedModel::new([
        asks(vec![call("c1", "weather", json!({ "city": "Oslo" }))]),
        Message::assistant("Rain in Oslo."),
    ]);
    let graph = react_agent(model.clone(), Tools::new().with(weather.clone()))
        .system_prompt("Be brief.")
        .build()
        .unwrap()
        .compile()
        .unwrap();
    let out = graph
        .invoke(
            MessagesState::update().messages([Message::user("Weather in Oslo?")]),
            &RunConfig::new(),
        )
        .await
        .unwrap();
    let roles: Vec<Role> = out.values.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
    assert_eq!(out.values.messages[2].content, "weather: Oslo");
    assert_eq!(weather.seen(), [json!({ "city": "Oslo" })]);
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].tools[0].name, "weather");
    assert_eq!(requests[0].messages[0], Message::system("Be brief."));
    // The system prompt is sent, not stored.
    assert!(out.values.messages.iter().all(|m| m.role != Role::System));
}

fn approval_graph(
    model: ScriptedModel,
    send: &Probe,
    lookup: &Probe,
) -> CompiledGraph<MessagesState> {
    react_agent(model, Tools::new().with(send.clone()).with(lookup.clone()))
        .approve_before(["send"])
        .build()
        .unwrap()
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap()
}

#[tokio::test]
async fn approval_pauses_before_chosen_tools_and_runs_them_with_edited_arguments() {
    let (send, lookup) = (Probe::new("send"), Probe::new("lookup"));
    let model = ScriptedModel::new([
        asks(vec![
            call("c1", "lookup", json!({ "city": "Oslo" })),
            call("c2", "send", json!({ "city": "Osло" })),
        ]),
        Message::assistant("Sent."),
    ]);
    let graph = approval_graph(model, &send, &lookup);
    let thread = RunConfig::new().thread("approve-1");
    let paused = graph
        .invoke(
            MessagesState::update().messages([Message::user("Send it")]),
            &thread,
        )
        .await
        .unwrap();
    assert_eq!(paused.interrupts.len(), 1);
    assert_eq!(paused.interrupts[0].node, "approve");
    // Only the call needing approval is shown; nothing ran yet.
    let shown = &paused.interrupts[0].value["tool_calls"];
    assert_eq!(shown.as_array().unwrap().len(), 1, "{shown}");
    assert_eq!(shown[0]["id"], "c2");
    assert!(send.seen().is_empty() && lookup.seen().is_empty());

    let review = Review::Edit {
        arguments: [("c2".to_string(), json!({ "city": "Oslo" }))].into(),
    };
    let done = graph
        .invoke(Command::resume(review), &thread)
        .await
        .unwrap();
    assert!(done.interrupts.is_empty());
    assert_eq!(send.seen(), [json!({ "city": "Oslo" })]);
    assert_eq!(lookup.seen(), [json!({ "city": "Oslo" })]);
    // The model's message now shows the arguments that ran, in its place.
    let m = &done.values.messages;
    assert_eq!(m.len(), 5);
    assert_eq!(m[1].tool_calls[1].arguments, json!({ "city": "Oslo" }));
    assert_eq!(m.last().unwrap().content, "Sent.");
}

#[tokio::test]
async fn a_rejected_turn_runs_no_tool_and_tells_the_model_why() {
    let (send, lookup) = (Probe::new("send"), Probe::new("lookup"));
    let model = ScriptedModel::new([
        asks(vec![call("c1", "send", json!({ "city": "Oslo" }))]),
        Message::assistant("Understood, not sent."),
    ]);
    let graph = approval_graph(model.clone(), &send, &lookup);
    let thread = RunConfig::new().thread("approve-2");
    graph
        .invoke(
            MessagesState::update().messages([Message::user("Send it")]),
            &thread,
        )
        .await
        .unwrap();
    let done = graph
        .invoke(
            Command::resume(json!({ "action": "reject", "message": "wrong recipient" })),
            &thread,
        )
        .await
        .unwrap();
    assert!(send.seen().is_empty());
    let told = &model.requests()[1].messages[2];
    assert_eq!(told.role, Role::Tool);
    assert!(told.content.contains("wrong recipient"), "{}", told.content);
    assert_eq!(
        done.values.messages.last().unwrap().content,
        "Understood, not sent."
    );
}

#[tokio::test]
async fn a_plain_true_approves_and_a_bad_review_is_a_clear_error() {
    let (send, lookup) = (Probe::new("send"), Probe::new("lookup"));
    let model = ScriptedModel::new([
        asks(vec![call("c1", "send", json!({ "city": "Oslo" }))]),
        Message::assistant("Sent."),
    ]);
    let graph = approval_graph(model, &send, &lookup);
    let thread = RunConfig::new().thread("approve-3");
    graph
        .invoke(
            MessagesState::update().messages([Message::user("Send it")]),
            &thread,
        )
        .await
        .unwrap();
    let err = graph
        .invoke(Command::resume(json!({ "action": "maybe" })), &thread)
        .await
        .expect_err("not a review");
    assert!(err.to_string().contains("not a review"), "{err}");
    assert!(send.seen().is_empty());
    // The pause is still there: a good answer continues.
    let done = graph.invoke(Command::resume(true), &thread).await.unwrap();
    assert_eq!(send.seen().len(), 1);
    assert_eq!(done.values.messages.last().unwrap().content, "Sent.");
}

#[test]
fn approval_of_a_tool_the_agent_lacks_is_refused() {
    let model = ScriptedModel::new([]);
    let err = react_agent(model, Tools::new().with(Probe::new("lookup")))
        .approve_before(["send"])
        .build()
        .err()
        .expect("refused");
    assert_eq!(
        err.to_string(),
        "approve_before names `send`, which is not one of the agent's tools (lookup)"
    );
}

#[tokio::test]
async fn messages_mode_streams_the_reply_in_order_and_the_stored_message_is_their_join() {
    let model = ScriptedModel::new([
        asks(vec![call("c1", "weather", json!({ "city": "Oslo" }))]),
        Message::assistant("It will rain in Oslo tomorrow; take a jacket."),
    ])
    .piece_size(3);
    let graph = react_agent(model, Tools::new().with(Probe::new("weather")))
        .build()
        .unwrap()
        .compile()
        .unwrap();
    let mut stream = graph.stream(
        MessagesState::update().messages([Message::user("Weather?")]),
        &RunConfig::new(),
        StreamMode::MESSAGES | StreamMode::VALUES,
    );
    let mut chunks: Vec<(i64, String, MessageChunk)> = Vec::new();
    let mut last = None;
    while let Some(event) = stream.next().await {
        match event.unwrap() {
            StreamEvent::Message { step, node, chunk } => chunks.push((step, node, chunk)),
            StreamEvent::Values { values, .. } => last = Some(values),
            _ => {}
        }
    }
    let state = last.expect("values");
    // Per message id, in arrival order: the node, the step, the join.
    let mut order: Vec<String> = Vec::new();
    for (_, _, c) in &chunks {
        if order.last() != Some(&c.id) {
            assert!(!order.contains(&c.id), "chunks of {} interleave", c.id);
            order.push(c.id.clone());
        }
    }
    let stored: Vec<&Message> = state.messages[1..].iter().collect();
    assert_eq!(
        order.len(),
        stored.len(),
        "one streamed message per stored one"
    );
    let steps = [(0, "agent"), (1, "tools"), (2, "agent")];
    for ((id, m), (step, node)) in order.iter().zip(&stored).zip(steps) {
        assert_eq!(m.id.as_ref(), Some(id));
        let mut b = MessageBuilder::new();
        for (s, n, c) in chunks.iter().filter(|(_, _, c)| &c.id == id) {
            assert_eq!((*s, n.as_str()), (step, node), "chunk of {id}");
            b.push(c).unwrap();
        }
        assert_eq!(&b.finish().unwrap(), *m, "the join of {id}'s chunks");
    }
    // The answer came in many pieces.
    let answer = stored[2].id.clone().unwrap();
    assert!(chunks.iter().filter(|(_, _, c)| c.id == answer).count() > 10);
}

#[tokio::test]
async fn without_messages_mode_nothing_is_streamed_and_the_reply_is_the_same() {
    let model = ScriptedModel::new([Message::assistant("Hello there.")]);
    let graph = react_agent(model, Tools::new())
        .build()
        .unwrap()
        .compile()
        .unwrap();
    let events: Vec<_> = graph
        .stream(
            MessagesState::update().messages([Message::user("Hi")]),
            &RunConfig::new(),
            StreamMode::UPDATES,
        )
        .collect()
        .await;
    assert!(
        events
            .iter()
            .all(|e| !matches!(e, Ok(StreamEvent::Message { .. })))
    );
    assert_eq!(events.len(), 1, "one update from the model");
}

#[tokio::test]
async fn an_agent_nested_as_a_subgraph_streams_its_tokens_to_the_parent_s_messages_mode() {
    #[derive(GraphState, Clone, Debug, Default)]
    struct Desk {
        question: String,
        answer: String,
    }
    let model = ScriptedModel::new([Message::assistant("Tides follow the moon.")]).piece_size(4);
    let child = react_agent(model, Tools::new())
        .build()
        .unwrap()
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap();
    let mut parent = StateGraph::<Desk>::new();
    let helper = parent.add_subgraph(stategraph::Subgraph::new(
        "helper",
        child,
        |d: &Desk| MessagesState::update().messages([Message::user(d.question.clone())]),
        |c: &MessagesState| {
            Desk::update().answer(
                c.messages
                    .last()
                    .map(|m| m.content.clone())
                    .unwrap_or_default(),
            )
        },
    ));
    parent.add_edge(START, &helper);
    let parent = parent
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap();
    let events: Vec<_> = parent
        .stream(
            Desk::update().question("Why tides?"),
            &RunConfig::new().thread("desk"),
            StreamMode::MESSAGES | StreamMode::VALUES,
        )
        .map(Result::unwrap)
        .collect()
        .await;
    let pieces: Vec<(&str, &str)> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Message { node, chunk, .. } => {
                Some((node.as_str(), chunk.content.as_str()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(pieces.len(), 6, "{pieces:?}");
    assert!(pieces.iter().all(|(node, _)| *node == "agent"));
    let text: String = pieces.iter().map(|(_, t)| *t).collect();
    assert_eq!(text, "Tides follow the moon.");
    // Only the parent's own events besides: no subgraph events without SUBGRAPHS.
    assert!(
        events
            .iter()
            .all(|e| !matches!(e, StreamEvent::Subgraph { .. }))
    );
    let StreamEvent::Values { values, .. } = events.last().unwrap() else {
        panic!("values last");
    };
    assert_eq!(values.answer, text);
}
