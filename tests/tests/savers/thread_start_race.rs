//! Starting a new thread is atomic with `RunConfig::new_thread_only`: of two runs
//! that start the same new thread at the same moment — two tasks of one process, or
//! two processes on one database — exactly one proceeds, and the other fails with
//! `RunError::ThreadExists` having saved nothing. Without it, both ran the whole
//! pipeline (`publish` twice).
//!
//! The PostgreSQL case needs a server: set `STATEGRAPH_POSTGRES_URL`.

use std::process::{Command, Stdio};
use std::sync::Arc;

use stategraph::checkpoint::CheckpointSaver;
use stategraph::prelude::*;
use stategraph_tests::servers;
use stategraph_tests::workloads::{Starters, Store, starters_graph};

const WORKER: &str = env!("CARGO_BIN_EXE_start_worker");
const ROUNDS: usize = 10;

#[tokio::test]
async fn two_tasks_starting_one_thread_in_memory() {
    let graph = starters_graph(Arc::new(InMemorySaver::new()));
    for round in 0..ROUNDS {
        let config = RunConfig::new()
            .thread(format!("race-{round}"))
            .new_thread_only();
        let (a, b) = tokio::join!(
            graph.invoke(Starters::update().starters(["a"]), &config),
            graph.invoke(Starters::update().starters(["b"]), &config),
        );
        let (winner, loser) = match (a, b) {
            (Ok(w), Err(l)) | (Err(l), Ok(w)) => (w, l),
            (a, b) => {
                panic!("round {round}: expected one start and one refusal, got {a:?} and {b:?}")
            }
        };
        assert!(
            matches!(&loser, RunError::ThreadExists { thread } if *thread == format!("race-{round}"))
        );
        assert!(loser.to_string().contains("already exists"));
        assert_eq!(winner.values.published, 1);
        assert_eq!(winner.values.starters.len(), 1);
        let state = graph.get_state(&config).await.unwrap().unwrap();
        assert_eq!(state.values, winner.values, "the refused run saved nothing");
    }
}

#[tokio::test]
async fn an_existing_thread_is_not_started_again() {
    let graph = starters_graph(Arc::new(InMemorySaver::new()));
    let config = RunConfig::new().thread("once");
    graph
        .invoke(Starters::update().starters(["first"]), &config)
        .await
        .unwrap();
    let err = graph
        .invoke(
            Starters::update().starters(["second"]),
            &config.clone().new_thread_only(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, RunError::ThreadExists { .. }), "{err:?}");
    // Without the option, new input continues the thread as before.
    let out = graph
        .invoke(Starters::update().starters(["second"]), &config)
        .await
        .unwrap();
    assert_eq!(out.values.starters, ["first", "second"]);
    assert_eq!(out.values.published, 2);
}

/// Two worker processes start `thread` at once; returns their outputs, sorted.
fn race(store: &Store, thread: &str) -> Vec<String> {
    let spawn = || {
        Command::new(WORKER)
            .args([store.arg(), thread.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start a worker")
    };
    let (a, b) = (spawn(), spawn());
    let mut outputs: Vec<String> = [a, b]
        .into_iter()
        .map(|child| {
            let out = child.wait_with_output().expect("a worker ends");
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        })
        .collect();
    outputs.sort();
    outputs
}

async fn processes_race(store: Store) {
    let saver: Arc<dyn CheckpointSaver> = store.open().await.unwrap();
    let graph = starters_graph(saver);
    for round in 0..ROUNDS {
        let thread = format!("race-{round}");
        assert_eq!(
            race(&store, &thread),
            ["exists", "started"],
            "round {round}"
        );
        let state = graph
            .get_state(&RunConfig::new().thread(thread.as_str()))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(state.values.published, 1, "round {round}: publish ran once");
        assert_eq!(state.values.starters.len(), 1, "round {round}");
    }
}

#[tokio::test]
async fn two_processes_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::Sqlite(dir.path().join("race.sqlite"));
    // Created once up front, so the racing workers only race to start the thread.
    drop(store.open().await.unwrap());
    processes_race(store).await;
}

#[tokio::test]
async fn two_processes_on_postgres() {
    let Some(url) = servers::postgres_url("thread_start_race::two_processes_on_postgres") else {
        return;
    };
    let schema = servers::fresh_schema("race");
    let store = Store::Postgres {
        url: url.clone(),
        schema: schema.clone(),
    };
    // Created once up front, so the racing workers only race to start the thread.
    drop(store.open().await.unwrap());
    processes_race(store).await;
    tokio::task::spawn_blocking(move || servers::drop_schema(&url, &schema))
        .await
        .unwrap();
}
