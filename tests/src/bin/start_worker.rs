//! A process that starts a thread only if it does not exist yet, for the thread-start
//! race tests.
//!
//! ```text
//! start_worker <store> <thread>
//! ```
//!
//! `<store>` is `sqlite:<path>` or `postgres:<schema>:<url>`. Prints `started` (the
//! run went through) or `exists` (exit code 3: another starter was first).

use std::process::ExitCode;

use stategraph::prelude::*;
use stategraph_tests::workloads::{Store, starters_graph};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (Some(store), Some(thread)) = (args.get(1).and_then(|a| Store::parse(a)), args.get(2))
    else {
        eprintln!("usage: start_worker <store> <thread>");
        return ExitCode::from(2);
    };
    let saver = match store.open().await {
        Ok(saver) => saver,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let graph = starters_graph(saver);
    let config = RunConfig::new().thread(thread.as_str()).new_thread_only();
    let me = format!("pid {}", std::process::id());
    match graph
        .invoke(
            stategraph_tests::workloads::Starters::update().starters([me]),
            &config,
        )
        .await
    {
        Ok(_) => {
            println!("started");
            ExitCode::SUCCESS
        }
        Err(RunError::ThreadExists { .. }) => {
            println!("exists");
            ExitCode::from(3)
        }
        Err(e) => {
            println!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
