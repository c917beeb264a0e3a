//! The `agent` example's graph: a tool-calling agent (`stategraph-agent`'s
//! [`ReactAgent`]) with human approval before its tools and a long-term memory of
//! each user's preferences in a store shared across threads. The example
//! (`examples/agent.rs`) drives it in a terminal; the tests drive it directly.
//!
//! The conversation lives in a `#[reducer(messages)]` channel. The tools are typed
//! `#[tool]` functions: their argument schemas come from their signatures, and a
//! model's call is decoded into their parameters before they run. The model is
//! [`ScriptedAssistant`], a deterministic stand-in for a language model (so the
//! example needs no network) that streams its replies word by word; any
//! [`ChatModel`] — `OpenAiModel` for a real one — fits in its place. The agent asks
//! for approval (an interrupt) before every tool call; on resume it runs the tools,
//! or tells the model they were declined.
//!
//! The agent also remembers across threads. `memory` runs first on every turn: when
//! the user states a preference ("from now on, temperatures in Fahrenheit") it is
//! written to the graph's store under `["users", <user id>]`, and on every turn the
//! stored preferences are read back into the state. The store is not part of any
//! thread's checkpoint, so a second thread (a new conversation) with the same user
//! starts with the preference the first one learned. The write is a put by key, so
//! running `memory` again (a resume, a retry) stores the same thing.

use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt, stream};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use stategraph::prelude::*;
use stategraph::store::{Store, StoreExt};
use stategraph::{BoxFuture, MessageChunk};
use stategraph_agent::{
    AgentState, ChatModel, ChatRequest, ChunkStream, ModelError, ReactAgent, Tools, new_message_id,
    tool,
};

/// The agent's state.
#[derive(GraphState, schemars::JsonSchema, Clone, Debug, Default)]
pub struct Agent {
    /// Whose conversation this is: the key of their long-term memory.
    pub user: String,
    /// The conversation.
    #[reducer(messages)]
    pub messages: Vec<Message>,
    /// What the store remembers about the user, read at the start of each turn.
    pub prefs: Option<Prefs>,
}

impl AgentState for Agent {
    fn messages(&self) -> &[Message] {
        &self.messages
    }
    fn add_messages(messages: Vec<Message>) -> AgentUpdate {
        Agent::update().messages(messages)
    }
}

/// A user's preferences, kept in the store across threads.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct Prefs {
    /// `"celsius"` or `"fahrenheit"`.
    pub temperature_unit: String,
}

/// The preference a user message states, if any.
pub fn stated_preference(text: &str) -> Option<Prefs> {
    let text = text.to_lowercase();
    if !text.contains("from now on") && !text.contains("i prefer") {
        return None;
    }
    let unit = ["fahrenheit", "celsius"]
        .into_iter()
        .find(|u| text.contains(u))?;
    Some(Prefs {
        temperature_unit: unit.to_owned(),
    })
}

/// How the agent tells the model that the user declined a tool call.
const DECLINED: &str = "The user rejected";

/// Temperature units.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Copy, Debug, PartialEq)]
#[serde(rename_all = "lowercase")]
pub enum Units {
    /// Degrees Celsius.
    Celsius,
    /// Degrees Fahrenheit.
    Fahrenheit,
}

/// Get tomorrow's or today's weather forecast for a city.
#[tool]
pub async fn get_weather(city: String, day: String, units: Option<Units>) -> String {
    let celsius = 7.0;
    let temperature = if units == Some(Units::Fahrenheit) {
        format!("{:.0}°F", celsius * 9.0 / 5.0 + 32.0)
    } else {
        format!("{celsius}°C")
    };
    format!("{city} {day}: {temperature} and rain, so pack a rain jacket.")
}

/// Convert an amount of money between two currencies.
#[tool]
pub fn convert_currency(amount: f64, from: String, to: String) -> Result<String, String> {
    match (from.as_str(), to.as_str()) {
        ("EUR", "NOK") => Ok(format!("{amount} EUR is about {:.0} NOK.", amount * 11.7)),
        _ => Err(format!("no rate from {from} to {to}")),
    }
}

/// The agent's tools.
pub fn tools() -> Tools {
    Tools::new().with(get_weather).with(convert_currency)
}

/// A scripted, deterministic stand-in for a language model: asks for the tools the
/// question needs, then answers from their results. It reads the user's preferred
/// units from the system prompt, as a real model would. Same conversation in, same
/// reply out; streamed a word at a time (with a pause before each word, if set, so
/// a client sees the answer being written).
#[derive(Clone, Copy, Debug, Default)]
pub struct ScriptedAssistant {
    pause: Duration,
}

impl ScriptedAssistant {
    /// The same model, pausing `pause` before each word it streams.
    #[must_use]
    pub fn paced(pause: Duration) -> Self {
        Self { pause }
    }
}

impl ChatModel for ScriptedAssistant {
    fn invoke<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<Message, ModelError>> {
        Box::pin(async move { Ok(scripted_reply(&request.messages).with_id(new_message_id())) })
    }

    fn stream<'a>(&'a self, request: &'a ChatRequest) -> ChunkStream<'a> {
        let reply = scripted_reply(&request.messages);
        let id = new_message_id();
        let mut chunks: Vec<MessageChunk> = reply
            .content
            .split_inclusive(' ')
            .map(|word| MessageChunk::text(id.clone(), word))
            .collect();
        if !reply.tool_calls.is_empty() {
            let calls = reply.with_id(id.clone());
            let mut whole = MessageChunk::whole(&calls, id);
            whole.content.clear();
            chunks.push(whole);
        }
        let pause = self.pause;
        Box::pin(stream::iter(chunks).then(move |chunk| async move {
            if !pause.is_zero() {
                tokio::time::sleep(pause).await;
            }
            Ok(chunk)
        }))
    }
}

fn scripted_reply(messages: &[Message]) -> Message {
    let fahrenheit = messages
        .iter()
        .any(|m| m.role == Role::System && m.content.to_lowercase().contains("fahrenheit"));
    // The turn: the latest user message and what followed it.
    let turn_start = messages
        .iter()
        .rposition(|m| m.role == Role::User)
        .unwrap_or(0);
    let turn = &messages[turn_start..];
    let question = turn
        .first()
        .map(|m| m.content.to_lowercase())
        .unwrap_or_default();
    let results: Vec<&Message> = turn.iter().filter(|m| m.role == Role::Tool).collect();
    if results.is_empty() {
        let mut calls = Vec::new();
        if question.contains("pack") || question.contains("weather") {
            let mut arguments = json!({ "city": "Oslo", "day": "tomorrow" });
            if fahrenheit {
                arguments["units"] = json!("fahrenheit");
            }
            calls.push(ToolCall {
                id: "call-1".into(),
                name: "get_weather".into(),
                arguments,
            });
        }
        if question.contains("eur") {
            calls.push(ToolCall {
                id: "call-2".into(),
                name: "convert_currency".into(),
                arguments: json!({ "amount": 120, "from": "EUR", "to": "NOK" }),
            });
        }
        if !calls.is_empty() {
            return Message::assistant("Let me check.").with_tool_calls(calls);
        }
        if let Some(p) = stated_preference(&question) {
            return Message::assistant(format!(
                "Noted: temperatures in {} from now on, in every conversation.",
                capitalized(&p.temperature_unit)
            ));
        }
        return Message::assistant(
            "Hello! Ask me what to pack for Oslo tomorrow, or what 120 EUR is in NOK, \
             and I will use my tools to find out.",
        );
    }
    let facts: Vec<&str> = results
        .iter()
        .map(|m| m.content.as_str())
        .filter(|c| !c.starts_with(DECLINED))
        .collect();
    if facts.is_empty() {
        return Message::assistant("I cannot answer that without the tools you declined.");
    }
    Message::assistant(format!("Here is what I found: {}", facts.join(" ")))
}

fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// Long-term memory: stores a preference the user's latest message states, then
/// reads the user's preferences into the state for the model.
#[node]
async fn memory(agent: &Agent, ctx: &NodeContext) -> Result<AgentUpdate, NodeError> {
    let store = ctx.store()?;
    // A client that names no user (a chat UI) shares one memory.
    let user = if agent.user.is_empty() {
        "anonymous"
    } else {
        agent.user.as_str()
    };
    let namespace = ["users", user];
    let latest = agent.messages.iter().rev().find(|m| m.role == Role::User);
    if let Some(prefs) = latest.and_then(|m| stated_preference(&m.content)) {
        store.put_typed(&namespace, "prefs", &prefs).await?;
    }
    let prefs: Option<Prefs> = store.get_typed(&namespace, "prefs").await?;
    Ok(Agent::update().prefs(prefs))
}

/// Why the agent graph could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildAgentError {
    /// The agent's nodes.
    #[error(transparent)]
    Agent(#[from] stategraph_agent::AgentError),
    /// The graph.
    #[error(transparent)]
    Graph(#[from] stategraph::BuildError),
}

/// Whether the agent asks before it runs a tool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Approval {
    /// An interrupt before every tool call: resume with `true` to run the tools.
    BeforeTools,
    /// Tools run as soon as the model asks for them.
    Never,
}

/// The agent graph, to compile or serve: `memory`, then the agent (`agent`,
/// `approve` when `approval` asks for it, `tools`), with `model` as its model.
///
/// # Errors
/// None in practice: the graph is fixed and valid.
pub fn graph(
    model: ScriptedAssistant,
    approval: Approval,
) -> Result<StateGraph<Agent>, BuildAgentError> {
    let mut graph = StateGraph::<Agent>::new();
    graph.add_node(memory).add_edge(START, memory);
    let mut agent = ReactAgent::<Agent>::new(model, tools()).system_prompt_with(|agent: &Agent| {
        agent
            .prefs
            .as_ref()
            .map(|p| format!("The user wants temperatures in {}.", p.temperature_unit))
    });
    if approval == Approval::BeforeTools {
        agent = agent.approve_before(["get_weather", "convert_currency"]);
    }
    let nodes = agent.add_to(&mut graph)?;
    graph.add_edge(memory, &nodes.agent);
    Ok(graph)
}

/// The agent graph, remembering users in `store` and threads in memory, asking for
/// approval before every tool.
///
/// # Errors
/// None in practice: the graph is fixed and valid.
pub fn build(store: Arc<dyn Store>) -> Result<CompiledGraph<Agent>, BuildAgentError> {
    let graph = graph(ScriptedAssistant::default(), Approval::BeforeTools)?;
    Ok(graph.compile_with(
        CompileOptions::new()
            .checkpointer(InMemorySaver::new())
            .shared_store(store),
    )?)
}

/// How many times the model answered in the thread's latest turn.
pub fn model_calls(agent: &Agent) -> usize {
    let start = agent
        .messages
        .iter()
        .rposition(|m| m.role == Role::User)
        .unwrap_or(0);
    agent.messages[start..]
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .count()
}

/// Sends one user message on `thread` and runs the turn to its end, asking for
/// approval at each pause; returns the final state.
///
/// `approve` answers each pause (given the requested tool calls); `show` is given
/// the turn's messages as they arrive.
///
/// # Errors
/// The run's error, or `approve`'s.
pub async fn turn(
    graph: &CompiledGraph<Agent>,
    thread: &RunConfig,
    user: &str,
    text: &str,
    approve: &mut dyn FnMut(&Value) -> std::io::Result<bool>,
    show: &mut dyn FnMut(&[Message]),
) -> Result<Agent, Box<dyn std::error::Error>> {
    let input = Agent::update().user(user).messages([Message::user(text)]);
    let mut out = graph.invoke(input, thread).await?;
    let mut shown = out
        .values
        .messages
        .iter()
        .rposition(|m| m.role == Role::User)
        .unwrap_or(0);
    loop {
        show(&out.values.messages[shown..]);
        shown = out.values.messages.len();
        let Some(pending) = out.interrupts.first() else {
            break;
        };
        let approved = approve(&pending.value["tool_calls"])?;
        out = graph.invoke(Command::resume(approved), thread).await?;
    }
    Ok(out.values)
}

/// The last message's text.
pub fn last_answer(agent: &Agent) -> String {
    agent
        .messages
        .last()
        .map(|m| m.content.clone())
        .unwrap_or_default()
}
