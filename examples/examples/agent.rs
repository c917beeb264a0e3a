//! A tool-calling agent with a human approval before every tool call, built with
//! `stategraph-agent`: typed `#[tool]` functions, a `ReactAgent` (model → approval →
//! tools → model), and a scripted stand-in for a language model so the example needs
//! no network (`agent_http` talks to a real one).
//!
//! The agent also remembers across threads. `memory` runs first on every turn: when
//! the user states a preference ("from now on, temperatures in Fahrenheit") it is
//! written to the graph's store under `["users", <user id>]`, and on every turn the
//! stored preferences are read back into the state. The store is not part of any
//! thread's checkpoint, so a second thread (a new conversation) with the same user
//! starts with the preference the first one learned. The write is a put by key, so
//! running `memory` again (a resume, a retry) stores the same thing.
//!
//! ```text
//! cargo run -p stategraph-examples --example agent            # asks before each tool call
//! cargo run -p stategraph-examples --example agent -- --yes   # approves by itself
//! ```
//!
//! Approval is automatic with `--yes` or when stdin is not a terminal. The graph
//! itself is `stategraph_examples::agent` (examples/src/agent.rs).

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;

use serde_json::Value;
use stategraph::store::InMemoryStore;
use stategraph::{Message, RunConfig};
use stategraph_examples::agent;

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
    let graph = agent::build(Arc::new(InMemoryStore::new()))?;
    let mut approve = |calls: &Value| ask(calls, auto);
    let mut show = |messages: &[Message]| print_messages(messages);
    let user = "u-42";

    println!("-- thread trip (user {user})");
    let trip = RunConfig::new().thread("trip");
    let question = "What should I pack for Oslo tomorrow, and what is 120 EUR in NOK?";
    let first = agent::turn(&graph, &trip, user, question, &mut approve, &mut show).await?;
    println!(
        "final answer after {} model calls: {}",
        agent::model_calls(&first),
        agent::last_answer(&first)
    );
    let preference = "From now on, give me temperatures in Fahrenheit.";
    let noted = agent::turn(&graph, &trip, user, preference, &mut approve, &mut show).await?;
    println!("remembered: {:?}", noted.prefs);

    println!("-- thread trip-2 (a new thread, same user {user})");
    let trip2 = RunConfig::new().thread("trip-2");
    let second = agent::turn(
        &graph,
        &trip2,
        user,
        "What should I pack for Oslo tomorrow?",
        &mut approve,
        &mut show,
    )
    .await?;
    println!(
        "second thread answer after {} model calls: {}",
        agent::model_calls(&second),
        agent::last_answer(&second)
    );
    Ok(())
}
