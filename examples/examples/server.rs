//! Serves graphs over the Agent Protocol / LangGraph Platform API, so LangGraph's own
//! clients drive them (the Python and JS `langgraph-sdk`, `RemoteGraph`, agent-chat-ui
//! and other chat UIs):
//!
//! - `agent`: a chat agent with tools (weather, currency) and a long-term memory of
//!   each user's preferences. Its model is a deterministic offline stand-in that
//!   streams its answers word by word and calls a tool when asked ("what should I
//!   pack for Oslo tomorrow?").
//! - `agent_approval`: the same agent, asking for approval (an interrupt) before it
//!   runs a tool; resume with `true` or `false`.
//! - `research`: the demo pipeline, pausing for a human's verdict.
//!
//! ```sh
//! cargo run -p stategraph-examples --example server                 # SQLite, 127.0.0.1:2024
//! cargo run -p stategraph-examples --example server -- --addr 127.0.0.1:8123 --db runs.sqlite
//! ```
//!
//! Then, from another terminal:
//!
//! ```sh
//! curl -s localhost:2024/threads -H 'content-type: application/json' -d '{"thread_id": "t1"}'
//! curl -sN localhost:2024/threads/t1/runs/stream -H 'content-type: application/json' \
//!   -d '{"assistant_id": "research", "input": {"topic": "Rust at work"}, "stream_mode": ["updates", "custom"]}'
//! ```

use std::process::ExitCode;
use std::time::Duration;

use stategraph_examples::agent::{self, Approval};
use stategraph_examples::research;
use stategraph_server::Server;

#[tokio::main]
async fn main() -> ExitCode {
    // Requests that fail are logged (`RUST_LOG=debug` shows every request).
    tracing_subscriber::fmt()
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    match serve().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // The error and what caused it, as sentences.
            eprintln!("error: {e}");
            let mut cause = e.source();
            while let Some(c) = cause {
                eprintln!("  caused by: {c}");
                cause = c.source();
            }
            ExitCode::FAILURE
        }
    }
}

async fn serve() -> Result<(), Box<dyn std::error::Error>> {
    let mut addr = "127.0.0.1:2024".to_string();
    let mut db = "stategraph-server.sqlite".to_string();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--addr" => {
                addr = args
                    .next()
                    .ok_or("--addr needs an address, like 127.0.0.1:2024")?
            }
            "--db" => db = args.next().ok_or("--db needs a SQLite file path")?,
            other => {
                return Err(
                    format!("unknown option `{other}`; options: --addr ADDR, --db PATH").into(),
                );
            }
        }
    }
    // Words come every 50 ms: a chat UI shows the answer being written.
    let model = agent::ScriptedAssistant::paced(Duration::from_millis(50));
    let running = Server::new()
        .graph("agent", agent::graph(model, Approval::Never)?)
        .graph(
            "agent_approval",
            agent::graph(model, Approval::BeforeTools)?,
        )
        .graph("research", research::graph())
        .sqlite(&db)
        .bind(&addr)
        .await?;
    println!(
        "serving graphs `agent`, `agent_approval` and `research` on http://{} (runs in {db}); Ctrl-C or SIGTERM stops",
        running.local_addr()
    );
    // Stops taking requests, lets open ones finish and hands held runs back.
    running.shutdown_on_signal().await?;
    Ok(())
}
