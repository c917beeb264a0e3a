//! A worker process for the crash and concurrency tests.
//!
//! ```text
//! saver_worker long <store> <thread> <rounds>
//!     Runs (or continues) the long fan-out graph on <thread> until it ends; prints
//!     `ready` once the saver is open and `finished` at the end.
//! saver_worker nested <store> <thread> <stages> <rounds>
//!     The same with the subgraph chain: <stages> parent steps, each a subgraph whose
//!     child runs <rounds> fan-out rounds.
//! saver_worker journal <store> <writer> <goal> <lock-timeout-ms> <concurrency> <thread>[,<thread>...]
//!     Runs the journal graph once on each thread (<concurrency> at a time), adding
//!     <goal> entries by <writer>; prints `started <thread>` and `done <thread>`.
//!     Exits with 3 if a thread was busy past the timeout.
//! saver_worker open <store> [<start-at-unix-ms>]
//!     Opens the saver (creating or upgrading its tables) and prints `opened`; with a
//!     start time, waits for it first, so that several workers open at one moment.
//! ```
//!
//! `<store>` is `sqlite:<path>` or `postgres:<schema>:<url>`.

use std::process::ExitCode;
use std::time::Duration;

use futures::StreamExt;
use stategraph::checkpoint::CheckpointError;
use stategraph::prelude::*;
use stategraph_tests::nested;
use stategraph_tests::workloads::{self, Store};

const BUSY: u8 = 3;

fn usage() -> ExitCode {
    eprintln!(
        "usage: saver_worker long <store> <thread> <rounds>\n       saver_worker nested <store> <thread> <stages> <rounds>\n       saver_worker open <store> [<start-at-unix-ms>]\n       saver_worker journal <store> <writer> <goal> <lock-timeout-ms> <concurrency> <threads>"
    );
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(store) = args.get(1).and_then(|s| Store::parse(s)) else {
        return usage();
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start a runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match args.first().map(String::as_str) {
        Some("open") if args.len() <= 3 => runtime.block_on(async {
            if let Some(start) = args.get(2).and_then(|s| s.parse::<u64>().ok()) {
                let at = std::time::UNIX_EPOCH + Duration::from_millis(start);
                // Sleeps to just before, then spins: a sleep alone wakes workers
                // milliseconds apart.
                if let Ok(wait) = at.duration_since(std::time::SystemTime::now()) {
                    std::thread::sleep(wait.saturating_sub(Duration::from_millis(3)));
                }
                while std::time::SystemTime::now() < at {
                    std::hint::spin_loop();
                }
            }
            match store.open().await {
                Ok(_) => {
                    println!("opened");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("cannot open the saver: {e}");
                    ExitCode::FAILURE
                }
            }
        }),
        Some("long") if args.len() == 4 => {
            let Ok(rounds) = args[3].parse() else {
                return usage();
            };
            runtime.block_on(long(store, &args[2], rounds))
        }
        Some("nested") if args.len() == 5 => {
            let (Ok(stages), Ok(rounds)) = (args[3].parse(), args[4].parse()) else {
                return usage();
            };
            runtime.block_on(nested(store, &args[2], stages, rounds))
        }
        Some("journal") if args.len() == 7 => {
            let (Ok(goal), Ok(timeout), Ok(concurrency)) =
                (args[3].parse(), args[4].parse(), args[5].parse())
            else {
                return usage();
            };
            let threads: Vec<String> = args[6].split(',').map(str::to_string).collect();
            runtime.block_on(journal(
                store,
                &args[2],
                goal,
                Duration::from_millis(timeout),
                concurrency,
                threads,
            ))
        }
        _ => usage(),
    }
}

async fn long(store: Store, thread: &str, rounds: u64) -> ExitCode {
    let saver = match store.open().await {
        Ok(saver) => saver,
        Err(e) => {
            eprintln!("cannot open the saver: {e}");
            return ExitCode::FAILURE;
        }
    };
    let graph = workloads::long_graph(saver);
    finish(&graph, thread, workloads::Long::update().rounds(rounds)).await
}

async fn nested(store: Store, thread: &str, stages: u64, rounds: u64) -> ExitCode {
    let saver = match store.open().await {
        Ok(saver) => saver,
        Err(e) => {
            eprintln!("cannot open the saver: {e}");
            return ExitCode::FAILURE;
        }
    };
    let graph = nested::pipeline_graph(saver, stages);
    finish(&graph, thread, nested::Pipeline::update().rounds(rounds)).await
}

/// Runs (or continues) `graph` on `thread` until it ends, starting it with `input` if
/// it is new; prints `ready` once the saver is open and `finished` at the end.
async fn finish<S: GraphState>(
    graph: &CompiledGraph<S>,
    thread: &str,
    input: S::Update,
) -> ExitCode {
    let config = RunConfig::new().thread(thread);
    println!("ready");
    let input = match graph.get_state(&config).await {
        Ok(None) => Some(input),
        // Finished: nothing planned (`next` alone would also be empty when every task
        // of the next step has its writes saved).
        Ok(Some(snapshot)) if snapshot.tasks.is_empty() => {
            println!("finished");
            return ExitCode::SUCCESS;
        }
        Ok(Some(_)) => None,
        Err(e) => {
            eprintln!("cannot read the thread: {e}");
            return ExitCode::FAILURE;
        }
    };
    match graph.invoke(input, &config).await {
        Ok(_) => {
            println!("finished");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("run failed: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn journal(
    store: Store,
    writer: &str,
    goal: u32,
    timeout: Duration,
    concurrency: usize,
    threads: Vec<String>,
) -> ExitCode {
    let saver = match store.open().await {
        Ok(saver) => saver,
        Err(e) => {
            eprintln!("cannot open the saver: {e}");
            return ExitCode::FAILURE;
        }
    };
    let graph = workloads::journal_graph(saver);
    let graph = &graph;
    let results: Vec<(String, Result<(), RunError>)> = futures::stream::iter(threads)
        .map(|thread| async move {
            println!("started {thread}");
            let config = RunConfig::new()
                .thread(thread.as_str())
                .lock_timeout(timeout);
            let result = graph
                .invoke(workloads::journal_input(writer, goal), &config)
                .await
                .map(|_| ());
            if result.is_ok() {
                println!("done {thread}");
            }
            (thread, result)
        })
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await;
    let mut code = ExitCode::SUCCESS;
    for (thread, result) in results {
        match result {
            Ok(()) => {}
            Err(RunError::Checkpoint(e @ CheckpointError::ThreadBusy { .. })) => {
                eprintln!("{thread}: {e}");
                code = ExitCode::from(BUSY);
            }
            Err(e) => {
                eprintln!("{thread}: run failed: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    code
}
