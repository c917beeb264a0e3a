//! The `agent` example's graph: a tool-calling loop with human approval and a
//! long-term memory of each user's preferences in a store shared across threads.
//! The example (`examples/agent.rs`) drives it in a terminal; the tests drive it
//! directly.
//!
//! The conversation lives in a `#[reducer(messages)]` channel. `model` — a scripted,
//! deterministic stand-in for a language model, so the example needs no network —
//! either answers or asks for tool calls; `approve_tools` pauses the run with the
//! requested calls (`ctx.interrupt`) and, on resume, either lets `tools` run them or
//! tells the model they were declined; `tools` appends one tool message per call and
//! hands back to `model`.
//!
//! The agent also remembers across threads. `memory` runs first on every turn: when
//! the user states a preference ("from now on, temperatures in Fahrenheit") it is
//! written to the graph's store under `["users", <user id>]`, and on every turn the
//! stored preferences are read back into the state. The store is not part of any
//! thread's checkpoint, so a second thread (a new conversation) with the same user
//! starts with the preference the first one learned. The write is a put by key, so
//! running `memory` again (a resume, a retry) stores the same thing.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use stategraph::BuildError;
use stategraph::prelude::*;
use stategraph::store::{Store, StoreExt};

/// The agent's state.
#[derive(GraphState, Clone, Debug, Default)]
pub struct Agent {
    /// Whose conversation this is: the key of their long-term memory.
    pub user: String,
    /// The conversation.
    #[reducer(messages)]
    pub messages: Vec<Message>,
    /// How often the model was called on this thread.
    #[reducer(add)]
    pub model_calls: u32,
    /// What the store remembers about the user, read at the start of each turn.
    pub prefs: Option<Prefs>,
}

/// A user's preferences, kept in the store across threads.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
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

/// How a declined tool call is reported to the model.
const DECLINED: &str = "The user declined";

/// The scripted model: asks for the tools the question needs, then answers from
/// their results. Same conversation in, same reply out.
fn scripted_reply(messages: &[Message], prefs: Option<&Prefs>) -> Message {
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
            let units = prefs.map_or("celsius", |p| p.temperature_unit.as_str());
            let mut arguments = json!({ "city": "Oslo", "day": "tomorrow" });
            if units != "celsius" {
                arguments["units"] = json!(units);
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

/// The tools the model may call.
fn run_tool(call: &ToolCall) -> String {
    match call.name.as_str() {
        "get_weather" => {
            let celsius = 7.0;
            let temperature = if call.arguments["units"] == "fahrenheit" {
                format!("{:.0}°F", celsius * 9.0 / 5.0 + 32.0)
            } else {
                format!("{celsius}°C")
            };
            format!(
                "{} {}: {temperature} and rain, so pack a rain jacket.",
                call.arguments["city"].as_str().unwrap_or("?"),
                call.arguments["day"].as_str().unwrap_or("today"),
            )
        }
        "convert_currency" => {
            let amount = call.arguments["amount"].as_f64().unwrap_or(0.0);
            format!("{amount} EUR is about {:.0} NOK.", amount * 11.7)
        }
        other => format!("unknown tool `{other}`"),
    }
}

fn pending_calls(agent: &Agent) -> &[ToolCall] {
    agent
        .messages
        .last()
        .filter(|m| m.role == Role::Assistant)
        .map_or(&[], |m| m.tool_calls.as_slice())
}

/// Long-term memory: stores a preference the user's latest message states, then
/// reads the user's preferences into the state for `model`.
#[node]
async fn memory(agent: &Agent, ctx: &NodeContext) -> Result<AgentUpdate, NodeError> {
    let store = ctx.store()?;
    let namespace = ["users", agent.user.as_str()];
    let latest = agent.messages.iter().rev().find(|m| m.role == Role::User);
    if let Some(prefs) = latest.and_then(|m| stated_preference(&m.content)) {
        store.put_typed(&namespace, "prefs", &prefs).await?;
    }
    let prefs: Option<Prefs> = store.get_typed(&namespace, "prefs").await?;
    Ok(Agent::update().prefs(prefs))
}

#[node]
fn model(agent: &Agent) -> AgentUpdate {
    Agent::update()
        .messages([scripted_reply(&agent.messages, agent.prefs.as_ref())])
        .model_calls(1)
}

/// Pauses with the requested calls; resumed with `true` the tools run, with `false`
/// the model is told each call was declined.
#[node]
fn approve_tools(agent: &Agent, ctx: &NodeContext) -> Result<Command<Agent>, NodeError> {
    let calls = pending_calls(agent);
    let approved: bool = ctx.interrupt(json!({ "tool_calls": calls }))?;
    if approved {
        return Ok(Command::goto(tools));
    }
    let declined: Vec<Message> = calls
        .iter()
        .map(|c| Message::tool(c.id.clone(), format!("{DECLINED} {}.", c.name)))
        .collect();
    Ok(Command::goto(model).update(Agent::update().messages(declined)))
}

#[node]
fn tools(agent: &Agent) -> AgentUpdate {
    Agent::update().messages(
        pending_calls(agent)
            .iter()
            .map(|call| Message::tool(call.id.clone(), run_tool(call))),
    )
}

fn after_model(agent: &Agent) -> Route<Agent> {
    if pending_calls(agent).is_empty() {
        Route::end()
    } else {
        Route::to(approve_tools)
    }
}

/// The agent graph, remembering users in `store` and threads in memory.
///
/// # Errors
/// None in practice: the graph is fixed and valid.
pub fn build(store: Arc<dyn Store>) -> Result<CompiledGraph<Agent>, BuildError> {
    StateGraph::<Agent>::new()
        .add_node(memory)
        .add_node(model)
        .add_node(approve_tools)
        .add_node(tools)
        .add_edge(START, memory)
        .add_edge(memory, model)
        .add_conditional_edges(model, after_model, (approve_tools, END))
        .add_edge(tools, model)
        .compile_with(
            CompileOptions::new()
                .checkpointer(InMemorySaver::new())
                .shared_store(store),
        )
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
