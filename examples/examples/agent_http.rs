//! A tool-calling agent on a real language model, over any OpenAI-compatible chat
//! completions server (OpenAI, vLLM, Ollama, llama.cpp), with the model's reply
//! streamed to the terminal token by token.
//!
//! ```text
//! OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=llama3.2 \
//!     cargo run -p stategraph-examples --example agent_http -- "What is 17.5% of 2340?"
//! OPENAI_API_KEY=sk-... OPENAI_MODEL=gpt-4o-mini \
//!     cargo run -p stategraph-examples --example agent_http
//! ```
//!
//! Without `OPENAI_MODEL` it says what to set and exits without running.

use std::io::Write;

use futures::StreamExt;
use stategraph::prelude::*;
use stategraph_agent::openai::OpenAiModel;
use stategraph_agent::{MessagesState, Tools, react_agent, tool};

/// Multiply two numbers.
#[tool]
fn multiply(a: f64, b: f64) -> String {
    format!("{}", a * b)
}

/// Add two numbers.
#[tool]
fn add(a: f64, b: f64) -> String {
    format!("{}", a + b)
}

/// The current date and time in UTC, as seconds since 1970-01-01.
#[tool]
fn unix_time() -> Result<String, std::time::SystemTimeError> {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?;
    Ok(now.as_secs().to_string())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let model = match OpenAiModel::from_env() {
        Ok(model) => model,
        Err(e) => {
            println!("agent_http skipped: {e}");
            println!(
                "set OPENAI_MODEL (and OPENAI_BASE_URL for a local server, OPENAI_API_KEY for a hosted one) to run it"
            );
            return Ok(());
        }
    };
    let question = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "What is 17.5% of 2340, plus 12?".to_string());
    let tools = Tools::new().with(multiply).with(add).with(unix_time);
    let graph = react_agent(model, tools)
        .system_prompt("Use the tools for arithmetic. Answer in one sentence.")
        .build()?
        .compile()?;

    println!("user: {question}");
    let mut events = graph.stream(
        MessagesState::update().messages([Message::user(question)]),
        &RunConfig::new(),
        StreamMode::MESSAGES,
    );
    let mut open: Option<String> = None;
    let mut stdout = std::io::stdout();
    while let Some(event) = events.next().await {
        let StreamEvent::Message { node, chunk, .. } = event? else {
            continue;
        };
        if open.as_deref() != Some(chunk.id.as_str()) {
            if open.is_some() {
                writeln!(stdout)?;
            }
            write!(stdout, "{node}: ")?;
            open = Some(chunk.id.clone());
        }
        write!(stdout, "{}", chunk.content)?;
        for call in &chunk.tool_calls {
            if let Some(name) = &call.name {
                write!(stdout, "→ {name}")?;
            }
            write!(stdout, "{}", call.arguments)?;
        }
        stdout.flush()?;
    }
    writeln!(stdout)?;
    Ok(())
}
