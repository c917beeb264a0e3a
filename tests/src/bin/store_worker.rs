//! A worker process for the store concurrency tests.
//!
//! ```text
//! store_worker write <store> <writer> <rounds> [<start-at-unix-ms>]
//!     Opens the store and puts <rounds> batches of `store_writers::batch`; with a
//!     start time, waits for it first, so that two workers write at once. Prints
//!     `done` at the end.
//! ```
//!
//! `<store>` is `sqlite:<path>` or `postgres:<schema>:<url>`.

use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use stategraph_tests::store_writers;
use stategraph_tests::workloads::Store;

fn usage() -> ExitCode {
    eprintln!("usage: store_worker write <store> <writer> <rounds> [<start-at-unix-ms>]");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) != Some("write") || !(4..=5).contains(&args.len()) {
        return usage();
    }
    let (Some(store), Ok(rounds)) = (Store::parse(&args[1]), args[3].parse::<usize>()) else {
        return usage();
    };
    let writer = args[2].clone();
    let start = args.get(4).and_then(|s| s.parse::<u64>().ok());
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
    runtime.block_on(async {
        let store = match store.open_store().await {
            Ok(store) => store,
            Err(e) => {
                eprintln!(
                    "cannot open the store: {e}: {:?}",
                    std::error::Error::source(&e)
                );
                return ExitCode::FAILURE;
            }
        };
        if let Some(start) = start {
            let at = UNIX_EPOCH + Duration::from_millis(start);
            if let Ok(wait) = at.duration_since(SystemTime::now()) {
                tokio::time::sleep(wait).await;
            }
        }
        for round in 0..rounds {
            if let Err(e) = store.batch(store_writers::batch(&writer, round)).await {
                eprintln!(
                    "round {round}: {e}: {:?}",
                    std::error::Error::source(&e).map(ToString::to_string)
                );
                return ExitCode::FAILURE;
            }
        }
        println!("done");
        ExitCode::SUCCESS
    })
}
