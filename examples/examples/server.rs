//! Serves the research pipeline over the Agent Protocol / LangGraph Platform API,
//! so LangGraph's own clients drive it (the Python `langgraph-sdk`, agent UIs).
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

use stategraph_examples::research;
use stategraph_server::Server;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
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
    let running = Server::new()
        .graph("research", research::graph())
        .sqlite(&db)
        .bind(&addr)
        .await?;
    println!(
        "serving graph `research` on http://{} (runs in {db}); Ctrl-C stops",
        running.local_addr()
    );
    tokio::signal::ctrl_c().await?;
    running.shutdown().await?;
    Ok(())
}
