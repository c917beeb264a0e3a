//! A tool-calling agent loop with a human approval before every tool call.
//!
//! The conversation lives in a `#[reducer(messages)]` channel. `model` — a scripted,
//! deterministic stand-in for a language model, so the example needs no network —
//! either answers or asks for tool calls; `approve_tools` pauses the run with the
//! requested calls (`ctx.interrupt`) and, on resume, either lets `tools` run them or
//! tells the model they were declined; `tools` appends one tool message per call and
//! hands back to `model`.
//!
//! ```text
//! cargo run -p stategraph-examples --example agent            # asks before each tool call
//! cargo run -p stategraph-examples --example agent -- --yes   # approves by itself
//! ```
//!
//! Approval is automatic with `--yes` or when stdin is not a terminal.

use std::io::{BufRead, IsTerminal, Write};

use serde_json::{Value, json};
use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Agent {
    #[reducer(messages)]
    messages: Vec<Message>,
    #[reducer(add)]
    model_calls: u32,
}

/// How a declined tool call is reported to the model.
const DECLINED: &str = "The user declined";

/// The scripted model: asks for the tools the question needs, then answers from
/// their results. Same conversation in, same reply out.
fn scripted_reply(messages: &[Message]) -> Message {
    let question = messages
        .iter()
        .find(|m| m.role == Role::User)
        .map(|m| m.content.to_lowercase())
        .unwrap_or_default();
    let results: Vec<&Message> = messages.iter().filter(|m| m.role == Role::Tool).collect();
    if results.is_empty() {
        let mut calls = Vec::new();
        if question.contains("pack") || question.contains("weather") {
            calls.push(ToolCall {
                id: "call-1".into(),
                name: "get_weather".into(),
                arguments: json!({ "city": "Oslo", "day": "tomorrow" }),
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

/// The tools the model may call.
fn run_tool(call: &ToolCall) -> String {
    match call.name.as_str() {
        "get_weather" => format!(
            "{} {}: 7°C and rain, so pack a rain jacket.",
            call.arguments["city"].as_str().unwrap_or("?"),
            call.arguments["day"].as_str().unwrap_or("today"),
        ),
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

#[node]
fn model(agent: &Agent) -> AgentUpdate {
    Agent::update()
        .messages([scripted_reply(&agent.messages)])
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

fn ask(calls: &Value, auto: bool) -> std::io::Result<bool> {
    let listed: Vec<String> = calls
        .as_array()
        .map(|calls| {
            calls
                .iter()
                .map(|c| format!("{}({})", c["name"].as_str().unwrap_or("?"), c["arguments"]))
                .collect()
        })
        .unwrap_or_default();
    let question = format!("allow {}?", listed.join(" and "));
    if auto {
        println!("approval: {question} yes (automatic: --yes or no terminal)");
        return Ok(true);
    }
    let mut stdout = std::io::stdout();
    loop {
        write!(stdout, "approval: {question} [y/n] ")?;
        stdout.flush()?;
        let mut line = String::new();
        if std::io::stdin().lock().read_line(&mut line)? == 0 {
            return Ok(false);
        }
        match line.trim() {
            "y" | "yes" => return Ok(true),
            "n" | "no" => return Ok(false),
            _ => continue,
        }
    }
}

fn print_messages(messages: &[Message]) {
    for m in messages {
        let who = format!("{:?}", m.role).to_lowercase();
        println!("{who:>9}: {}", m.content);
        for call in &m.tool_calls {
            println!(
                "           → {} {} ({})",
                call.name, call.arguments, call.id
            );
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let auto = std::env::args().any(|a| a == "--yes") || !std::io::stdin().is_terminal();
    let graph = StateGraph::<Agent>::new()
        .add_node(model)
        .add_node(approve_tools)
        .add_node(tools)
        .add_edge(START, model)
        .add_conditional_edges(model, after_model, (approve_tools, END))
        .add_edge(tools, model)
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))?;
    let thread = RunConfig::new().thread("trip");

    let question =
        Message::user("What should I pack for Oslo tomorrow, and what is 120 EUR in NOK?");
    let mut out = graph
        .invoke(Agent::update().messages([question]), &thread)
        .await?;
    let mut shown = 0;
    loop {
        print_messages(&out.values.messages[shown..]);
        shown = out.values.messages.len();
        let Some(pending) = out.interrupts.first() else {
            break;
        };
        let approved = ask(&pending.value["tool_calls"], auto)?;
        out = graph.invoke(Command::resume(approved), &thread).await?;
    }
    let answer = out
        .values
        .messages
        .last()
        .map(|m| m.content.clone())
        .unwrap_or_default();
    println!(
        "final answer after {} model calls: {answer}",
        out.values.model_calls
    );
    Ok(())
}
