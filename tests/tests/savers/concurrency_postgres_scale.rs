//! Scale-out on PostgreSQL: 4 worker processes share one database and each runs all
//! of the same 50 threads (in different orders, 8 at a time), so threads are contended
//! across processes while different threads proceed in parallel. Every run completes,
//! and every thread's history is one unbroken chain holding each worker's run whole.
//!
//! Needs a server: set `STATEGRAPH_POSTGRES_URL`.

use std::process::{Command, Stdio};

use stategraph::checkpoint::{CheckpointConfig, ListOptions};
use stategraph::prelude::*;
use stategraph_tests::servers;
use stategraph_tests::workloads::{self, Store};

const WORKERS: usize = 4;
const THREADS: usize = 50;
const GOAL: u32 = 5;

#[test]
fn four_processes_run_fifty_shared_threads_and_every_history_is_intact() {
    let Some(url) = servers::postgres_url(module_path!()) else {
        return;
    };
    let store = Store::Postgres {
        url: url.clone(),
        schema: servers::fresh_schema("scale"),
    };
    let threads: Vec<String> = (0..THREADS).map(|i| format!("thread-{i:02}")).collect();
    let workers: Vec<_> = (0..WORKERS)
        .map(|w| {
            let mut order = threads.clone();
            order.rotate_left(w * THREADS / WORKERS);
            if w % 2 == 1 {
                order.reverse();
            }
            Command::new(env!("CARGO_BIN_EXE_saver_worker"))
                .args([
                    "journal",
                    &store.arg(),
                    &format!("w{w}"),
                    &GOAL.to_string(),
                    "120000",
                    "8",
                    &order.join(","),
                ])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (w, worker) in workers.into_iter().enumerate() {
        let out = worker.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "worker {w} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            stdout.lines().filter(|l| l.starts_with("done ")).count(),
            THREADS
        );
    }

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let saver = store.open().await.unwrap();
        let graph = workloads::journal_graph(saver.clone());
        for thread in &threads {
            let mut history = saver
                .list(&CheckpointConfig::thread(thread), &ListOptions::new())
                .await
                .unwrap();
            history.reverse();
            let state = graph
                .get_state(&RunConfig::new().thread(thread.as_str()))
                .await
                .unwrap()
                .unwrap();
            let mut writers = workloads::check_journal(&history, &state.values.entries, GOAL);
            writers.sort();
            assert_eq!(writers, ["w0", "w1", "w2", "w3"], "thread {thread}");
            // An input checkpoint and one per entry, per run.
            assert_eq!(
                history.len(),
                WORKERS * (1 + GOAL as usize),
                "thread {thread}"
            );
        }
    });
    drop(runtime);
    if let Store::Postgres { url, schema } = &store {
        servers::drop_schema(url, schema);
    }
}
