//! `prune`: keeps a thread's newest checkpoints and nothing older, its latest
//! state unchanged; `--all` prunes every thread; asks first unless `--yes`.

use crate::common;

use common::Fixture;
use serde_json::json;
use stategraph_cli::exit;

fn count(f: &Fixture, thread: &str) -> usize {
    f.run(&["history", thread, "--json"]).json()["checkpoints"]
        .as_array()
        .map_or(0, Vec::len)
}

#[tokio::test]
async fn prune_keeps_the_newest_checkpoints_and_the_latest_state() {
    let f = Fixture::tickets().await;
    let latest = f.run(&["show", "ticket-done", "--json"]).json();
    let other = f.run(&["show", "ticket-open", "--json"]).json();

    let out = f.run(&["prune", "ticket-done", "--yes"]).ok().to_string();
    assert_eq!(out, "pruned thread ticket-done: 15 → 1 checkpoints\n");
    assert_eq!(count(&f, "ticket-done"), 1);
    assert_eq!(
        f.run(&["show", "ticket-done", "--json"]).json()["values"],
        latest["values"]
    );
    // The other thread is untouched.
    assert_eq!(count(&f, "ticket-open"), 14);
    assert_eq!(f.run(&["show", "ticket-open", "--json"]).json(), other);

    let json = f
        .run(&["prune", "--all", "--keep", "3", "-y", "--json"])
        .json();
    assert_eq!(
        json,
        json!({ "keep": 3, "threads": [
            { "thread_id": "ticket-done", "before": 1, "after": 1 },
            { "thread_id": "ticket-open", "before": 14, "after": 3 },
        ] })
    );
    assert_eq!(count(&f, "ticket-open"), 3);
}

#[tokio::test]
async fn prune_asks_first_and_takes_a_thread_or_all() {
    let f = Fixture::tickets().await;
    let err = f
        .run(&["prune", "ticket-done"])
        .fails(i32::from(exit::NOT_CONFIRMED))
        .to_string();
    assert!(
        err.contains("refusing to prune") && err.contains("--yes"),
        "{err}"
    );
    assert_eq!(count(&f, "ticket-done"), 15);
    f.run(&["prune", "--yes"]).fails(i32::from(exit::USAGE));
    f.run(&["prune", "ticket-done", "--all", "--yes"])
        .fails(i32::from(exit::USAGE));
    f.run(&["prune", "ticket-done", "--keep", "0", "--yes"])
        .fails(i32::from(exit::USAGE));
    f.run(&["prune", "no-such-thread", "--yes"])
        .fails(i32::from(exit::UNKNOWN_THREAD));
}
