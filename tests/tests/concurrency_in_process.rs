//! One writer per thread inside one process: concurrent runs of a thread take turns,
//! a run that may not wait fails with `ThreadBusy`, other threads and reads are never
//! held up, and a dropped stream or finished run releases its thread.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use stategraph::checkpoint::{
    CheckpointConfig, CheckpointError, CheckpointSaver, InMemorySaver, ListOptions,
};
use stategraph::prelude::*;
use stategraph_tests::workloads::{self, journal_input};

fn setup() -> (Arc<InMemorySaver>, CompiledGraph<workloads::Journal>) {
    let saver = Arc::new(InMemorySaver::new());
    let graph = workloads::journal_graph(saver.clone());
    (saver, graph)
}

fn busy(err: &RunError) -> bool {
    matches!(
        err,
        RunError::Checkpoint(CheckpointError::ThreadBusy { .. })
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_runs_of_one_thread_take_turns() {
    let (saver, graph) = setup();
    let config = RunConfig::new().thread("shared");
    let (a, b) = tokio::join!(
        graph.invoke(journal_input("a", 20), &config),
        graph.invoke(journal_input("b", 20), &config)
    );
    a.unwrap();
    b.unwrap();
    let mut history = saver
        .list(&CheckpointConfig::thread("shared"), &ListOptions::new())
        .await
        .unwrap();
    history.reverse();
    let state = graph.get_state(&config).await.unwrap().unwrap();
    let mut writers = workloads::check_journal(&history, &state.values.entries, 20);
    writers.sort();
    assert_eq!(writers, ["a", "b"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_thread_makes_writers_wait_then_fail_but_not_readers_or_other_threads() {
    let (saver, graph) = setup();
    let config = RunConfig::new().thread("held");
    graph
        .invoke(journal_input("first", 2), &config)
        .await
        .unwrap();

    let lock = saver.lock_thread("held", Duration::ZERO).await.unwrap();
    let impatient = config.clone().lock_timeout(Duration::from_millis(50));
    let started = std::time::Instant::now();
    let err = graph
        .invoke(journal_input("second", 2), &impatient)
        .await
        .unwrap_err();
    assert!(busy(&err), "{err:?}");
    assert!(started.elapsed() >= Duration::from_millis(50));
    assert!(err.to_string().contains("thread `held` is busy"), "{err}");
    let err = graph
        .update_state(&impatient, journal_input("edit", 1))
        .await
        .unwrap_err();
    assert!(busy(&err), "update_state writes too: {err:?}");

    // Reads and other threads go on.
    let state = graph.get_state(&config).await.unwrap().unwrap();
    assert_eq!(state.values.entries, ["first-1", "first-2"]);
    assert_eq!(
        graph
            .get_state_history(&config, &ListOptions::new())
            .await
            .unwrap()
            .len(),
        3
    );
    let other = RunConfig::new()
        .thread("other")
        .lock_timeout(Duration::from_millis(50));
    graph.invoke(journal_input("x", 2), &other).await.unwrap();

    // Once released, a patient run that was waiting gets in.
    let patient = config.clone().lock_timeout(Duration::from_secs(10));
    let release = async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        drop(lock);
    };
    let ((), out) = tokio::join!(release, graph.invoke(journal_input("second", 2), &patient));
    assert_eq!(
        out.unwrap().values.entries,
        ["first-1", "first-2", "second-1", "second-2"],
        "nothing of the refused runs was written"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_stream_releases_its_thread() {
    let (saver, graph) = setup();
    let config = RunConfig::new().thread("streamed");
    let mut stream = graph.stream(journal_input("s", 500), &config, StreamMode::UPDATES);
    // The run is under way once it reports an update.
    assert!(stream.next().await.unwrap().is_ok());
    drop(stream);
    let lock = saver.lock_thread("streamed", Duration::from_secs(5)).await;
    assert!(lock.is_ok(), "{lock:?}");
}
