//! `delete`: removes one thread and nothing else; asks first, refuses without a
//! terminal unless `--yes`, and a "no" keeps the thread.

use crate::common;

use std::io;

use common::Fixture;
use serde_json::json;
use stategraph_cli::{Cli, CliError, Confirm, exit, run};

fn thread_names(f: &Fixture) -> Vec<String> {
    f.run(&["threads", "--json"]).json()["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["thread_id"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn delete_yes_removes_the_thread_and_keeps_the_others() {
    let f = Fixture::tickets().await;
    let before = f.run(&["show", "ticket-open", "--json"]).json();

    let out = f.run(&["delete", "ticket-done", "--yes"]).ok().to_string();
    assert_eq!(out, "deleted thread ticket-done (15 checkpoints)\n");
    assert_eq!(thread_names(&f), ["ticket-open"]);
    assert_eq!(
        f.run(&["history", "ticket-done"]).code,
        i32::from(exit::UNKNOWN_THREAD)
    );
    // The other thread is untouched, values included.
    assert_eq!(f.run(&["show", "ticket-open", "--json"]).json(), before);

    let json = f.run(&["delete", "ticket-open", "-y", "--json"]).json();
    assert_eq!(
        json,
        json!({ "thread_id": "ticket-open", "checkpoints": 14, "deleted": true })
    );
    assert!(thread_names(&f).is_empty());
    assert_eq!(f.run(&["threads"]).ok(), "no threads\n");
}

#[tokio::test]
async fn delete_without_a_terminal_and_without_yes_refuses() {
    let f = Fixture::tickets().await;
    let err = f
        .run(&["delete", "ticket-done"])
        .fails(i32::from(exit::NOT_CONFIRMED))
        .to_string();
    assert!(
        err.contains("no terminal") && err.contains("--yes"),
        "{err}"
    );
    assert_eq!(thread_names(&f), ["ticket-done", "ticket-open"]);
}

#[tokio::test]
async fn delete_of_an_unknown_thread_fails_and_changes_nothing() {
    let f = Fixture::tickets().await;
    let err = f
        .run(&["delete", "ticket-nope", "--yes"])
        .fails(i32::from(exit::UNKNOWN_THREAD))
        .to_string();
    assert!(err.contains("`ticket-nope` not found"), "{err}");
    assert_eq!(thread_names(&f), ["ticket-done", "ticket-open"]);
}

/// Answers every question with `answer`, recording the questions.
struct Answer {
    answer: Option<bool>,
    asked: Vec<String>,
}

impl Confirm for Answer {
    fn confirm(&mut self, question: &str) -> io::Result<Option<bool>> {
        self.asked.push(question.to_string());
        Ok(self.answer)
    }
}

async fn delete_answering(f: &Fixture, answer: Option<bool>) -> (Result<(), CliError>, Answer) {
    use clap::Parser;
    let cli = Cli::parse_from([
        "stategraph",
        "--db",
        f.db.to_str().unwrap(),
        "delete",
        "ticket-done",
    ]);
    let target = cli.target().unwrap();
    let mut confirm = Answer {
        answer,
        asked: Vec::new(),
    };
    let mut out = Vec::new();
    let result = run(&cli, &target, &mut out, &mut confirm).await;
    (result, confirm)
}

#[tokio::test]
async fn delete_asks_first_and_a_no_keeps_the_thread() {
    let f = Fixture::tickets().await;

    let (result, confirm) = delete_answering(&f, Some(false)).await;
    let err = result.unwrap_err();
    assert_eq!(err.exit_code(), exit::NOT_CONFIRMED);
    assert_eq!(err.to_string(), "thread `ticket-done` was not deleted");
    assert_eq!(confirm.asked.len(), 1);
    let question = &confirm.asked[0];
    assert!(
        question.starts_with("delete thread `ticket-done` (15 checkpoints) from "),
        "{question}"
    );
    assert_eq!(thread_names(&f), ["ticket-done", "ticket-open"]);

    let (result, _) = delete_answering(&f, None).await;
    assert!(matches!(result, Err(CliError::NoTerminal { .. })));
    assert_eq!(thread_names(&f), ["ticket-done", "ticket-open"]);

    let (result, confirm) = delete_answering(&f, Some(true)).await;
    result.unwrap();
    assert_eq!(confirm.asked.len(), 1);
    assert_eq!(thread_names(&f), ["ticket-open"]);
}

#[tokio::test]
async fn delete_waits_for_a_run_writing_the_thread_and_then_refuses() {
    use stategraph::checkpoint::CheckpointSaver;
    use stategraph_sqlite::SqliteSaver;

    let f = Fixture::tickets().await;
    // Another process's run would hold the thread like this while it writes.
    let saver = SqliteSaver::open(&f.db).unwrap();
    let held = saver
        .lock_thread("ticket-done", std::time::Duration::ZERO)
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let err = f
        .run(&["delete", "ticket-done", "--yes"])
        .fails(i32::from(exit::FAILURE))
        .to_string();
    assert!(err.contains("thread `ticket-done` is busy"), "{err}");
    assert!(started.elapsed() >= std::time::Duration::from_secs(4));
    assert_eq!(thread_names(&f), ["ticket-done", "ticket-open"]);

    drop(held);
    f.run(&["delete", "ticket-done", "--yes"]).ok();
    assert_eq!(thread_names(&f), ["ticket-open"]);
}
