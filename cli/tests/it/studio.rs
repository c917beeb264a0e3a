//! `stategraph studio`: the binary serves the Studio over a SQLite file, read-only,
//! and prints where; the graph comes from what the checkpoints recorded.

use crate::common;

use common::{DEMO_THREAD, Fixture, get, studio};
use serde_json::Value;

#[tokio::test]
async fn studio_serves_the_page_and_the_api_over_the_file_and_says_where() {
    let f = Fixture::with_demo().await;
    let (_served, addr) = studio(&["--db", f.db.to_str().unwrap()]);
    let addr = addr.as_str();
    let (status, head, body) = get(addr, "/studio");
    assert_eq!(status, 200);
    assert!(head.contains("content-type: text/html"), "{head}");
    assert!(body.contains("<html"), "{body}");

    let (status, _, body) = get(addr, "/studio/api/threads");
    assert_eq!(status, 200, "{body}");
    let list: Value = serde_json::from_str(&body).unwrap();
    let ids: Vec<&str> = list["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["thread_id"].as_str().unwrap())
        .collect();
    assert_eq!(list["total"], 3, "{list}");
    for id in [DEMO_THREAD, "ticket-open", "ticket-done"] {
        assert!(ids.contains(&id), "{ids:?}");
    }

    let (_, _, body) = get(addr, "/studio/api/info");
    let info: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (info["mode"].as_str(), info["drive"].as_bool()),
        (Some("stored"), Some(false))
    );

    // The demo's graph, with no demo code in this process.
    let (status, _, body) = get(addr, &format!("/studio/api/threads/{DEMO_THREAD}"));
    assert_eq!(status, 200, "{body}");
    let thread: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(thread["status"], "finished");
    let nodes: Vec<&str> = thread["graph"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    assert!(
        nodes.contains(&"approve") && nodes.contains(&"publish"),
        "{nodes:?}"
    );
}

#[test]
fn studio_on_a_missing_file_fails_as_the_other_commands_do() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nothing.sqlite");
    let run = common::stategraph(&["--db", missing.to_str().unwrap(), "studio"]);
    let err = run.fails(3);
    assert!(err.contains("does not exist"), "{err}");
    assert!(!missing.exists(), "nothing was created");
}
