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

/// An in-memory saver whose `put` takes a while, as a remote database's might.
struct SlowPuts(Arc<InMemorySaver>);

mod slow {
    use std::time::Duration;

    use stategraph::BoxFuture;
    use stategraph::checkpoint::*;

    impl CheckpointSaver for super::SlowPuts {
        fn put<'a>(
            &'a self,
            config: &'a CheckpointConfig,
            checkpoint: Checkpoint,
            metadata: CheckpointMetadata,
        ) -> BoxFuture<'a, SaverResult<CheckpointConfig>> {
            Box::pin(async move {
                tokio::time::sleep(Duration::from_millis(300)).await;
                self.0.put(config, checkpoint, metadata).await
            })
        }
        fn get_tuple<'a>(
            &'a self,
            config: &'a CheckpointConfig,
        ) -> BoxFuture<'a, SaverResult<Option<CheckpointTuple>>> {
            self.0.get_tuple(config)
        }
        fn list<'a>(
            &'a self,
            config: &'a CheckpointConfig,
            options: &'a ListOptions,
        ) -> BoxFuture<'a, SaverResult<Vec<CheckpointTuple>>> {
            self.0.list(config, options)
        }
        fn put_writes<'a>(
            &'a self,
            config: &'a CheckpointConfig,
            writes: Vec<PendingWrite>,
        ) -> BoxFuture<'a, SaverResult<()>> {
            self.0.put_writes(config, writes)
        }
        fn channel_history<'a>(
            &'a self,
            config: &'a CheckpointConfig,
            channel: &'a str,
            from: u64,
            to: u64,
        ) -> BoxFuture<'a, SaverResult<Vec<(u64, StoredValue)>>> {
            self.0.channel_history(config, channel, from, to)
        }
        fn list_threads(&self) -> BoxFuture<'_, SaverResult<Vec<ThreadInfo>>> {
            self.0.list_threads()
        }
        fn list_namespaces<'a>(
            &'a self,
            thread_id: &'a str,
        ) -> BoxFuture<'a, SaverResult<Vec<String>>> {
            self.0.list_namespaces(thread_id)
        }
        fn delete_thread<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, SaverResult<()>> {
            self.0.delete_thread(thread_id)
        }
        fn copy_thread<'a>(&'a self, from: &'a str, to: &'a str) -> BoxFuture<'a, SaverResult<()>> {
            self.0.copy_thread(from, to)
        }
        fn prune<'a>(&'a self, thread_id: &'a str, keep: usize) -> BoxFuture<'a, SaverResult<()>> {
            self.0.prune(thread_id, keep)
        }
        fn lock_thread<'a>(
            &'a self,
            thread_id: &'a str,
            wait: Duration,
        ) -> BoxFuture<'a, SaverResult<ThreadLock>> {
            self.0.lock_thread(thread_id, wait)
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_saves_of_a_cancelled_run_keep_the_thread_until_they_land() {
    let inner = Arc::new(InMemorySaver::new());
    let graph = workloads::journal_graph(Arc::new(SlowPuts(inner.clone())));
    let config = RunConfig::new()
        .thread("async")
        .durability(Durability::Async);
    let mut stream = graph.stream(journal_input("s", 100), &config, StreamMode::UPDATES);
    assert!(stream.next().await.unwrap().is_ok());
    drop(stream);
    // The run is gone, but a save it started in the background is still under way.
    let err = inner
        .lock_thread("async", Duration::ZERO)
        .await
        .unwrap_err();
    assert!(matches!(err, CheckpointError::ThreadBusy { .. }), "{err:?}");
    let lock = inner
        .lock_thread("async", Duration::from_secs(5))
        .await
        .unwrap();
    // Once the thread is free, no save of the old run lands any more.
    let before = inner.checkpoint_count();
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(inner.checkpoint_count(), before);
    assert!(before > 0);
    drop(lock);
}
