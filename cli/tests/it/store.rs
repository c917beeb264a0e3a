//! `stategraph store`: the namespaces, items and search hits of a store written by a
//! real `SqliteStore` (and a `PostgresStore`), as tables compared with the files in
//! `tests/snapshots/` (`STATEGRAPH_BLESS=1` rewrites them) and as JSON; `rm`; and a
//! clear error with its own exit code for a bad filter, a bad namespace, a missing
//! item, a missing file and a file without store tables.
//!
//! Times differ between runs and are masked, each by a text of its own length so the
//! tables keep their alignment.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::stategraph;
use serde_json::json;
use stategraph::store::{PutOptions, Store};
use stategraph_cli::exit;
use stategraph_cli::layout::display_width;
use stategraph_sqlite::SqliteStore;

const WIDTH: usize = 100;

fn code(c: u8) -> i32 {
    i32::from(c)
}

/// Puts the fixture's items, one batch each (so each is newer than the one before).
async fn fill(store: &dyn Store) {
    store
        .put(
            &["users", "u1"],
            "prefs",
            json!({"theme": "dark", "lang": "en"}),
        )
        .await
        .unwrap();
    store
        .put(
            &["users", "u1"],
            "profile",
            json!({"name": "Ada", "score": 5}),
        )
        .await
        .unwrap();
    store
        .put(
            &["users", "u2"],
            "prefs",
            json!({"theme": "light", "lang": "fr"}),
        )
        .await
        .unwrap();
    store
        .put_with(
            &["users", "u2"],
            "session",
            json!({"token": "t-1"}),
            PutOptions::new().ttl(Duration::from_secs(3600)),
        )
        .await
        .unwrap();
    let long = "The store keeps long-term memory shared across threads. ".repeat(4);
    store
        .put(&["docs"], "readme", json!({"title": "Store", "text": long}))
        .await
        .unwrap();
}

/// A SQLite file holding the fixture's items.
struct Fixture {
    _dir: tempfile::TempDir,
    db: PathBuf,
}

impl Fixture {
    async fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("memory.sqlite");
        fill(&SqliteStore::open(&db).unwrap()).await;
        Self { _dir: dir, db }
    }

    fn run(&self, args: &[&str]) -> common::Run {
        let mut all = vec!["--db", self.db.to_str().unwrap(), "--width", "100", "store"];
        all.extend_from_slice(args);
        stategraph(&all)
    }
}

/// `text` with each RFC 3339 time (`2026-11-25T01:23:36.123Z`, any number of
/// fraction digits) replaced by a mask of the same length.
fn mask_times(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let digit = |i: usize| chars.get(i).is_some_and(char::is_ascii_digit);
    let at = |i: usize, c: char| chars.get(i) == Some(&c);
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let head = (0..4).all(|k| digit(i + k))
            && at(i + 4, '-')
            && at(i + 7, '-')
            && at(i + 10, 'T')
            && at(i + 13, ':')
            && at(i + 16, ':');
        if head {
            let mut end = i + 19;
            if at(end, '.') {
                end += 1;
                while digit(end) {
                    end += 1;
                }
            }
            if at(end, 'Z') {
                let len = end + 1 - i;
                out.push_str(&format!("{:#<len$}", "<time>"));
                i = end + 1;
                continue;
            }
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

fn snapshot_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("snapshots")
        .join(format!("{name}.txt"))
}

/// Compares the masked output of `args` with snapshot `name`; every line fits.
fn check_snapshot(f: &Fixture, name: &str, args: &[&str]) {
    let out = f.run(args).ok().to_string();
    for line in out.lines() {
        assert!(display_width(line) <= WIDTH, "{name}: too wide:\n{line}");
    }
    let shown: Vec<String> = args
        .iter()
        .map(|a| {
            if a.is_empty() || a.contains(' ') {
                format!("'{a}'")
            } else {
                (*a).to_string()
            }
        })
        .collect();
    let masked = format!(
        "$ stategraph store {}\n{}",
        shown.join(" "),
        mask_times(&out)
    );
    stategraph_tests::golden::compare_or_bless(
        &snapshot_path(name),
        &format!("snapshot `{name}`"),
        &masked,
    );
}

#[tokio::test]
async fn tables_of_namespaces_items_and_hits() {
    let f = Fixture::new().await;
    check_snapshot(&f, "store-ls", &["ls"]);
    check_snapshot(&f, "store-ls-prefix", &["ls", "--prefix", "users"]);
    check_snapshot(&f, "store-get", &["get", "users/u1", "profile"]);
    check_snapshot(&f, "store-get-ttl", &["get", "users/u2", "session"]);
    check_snapshot(&f, "store-search", &["search", ""]);
    check_snapshot(
        &f,
        "store-search-filter",
        &[
            "search",
            "users",
            "--filter",
            r#"{"theme": {"$in": ["dark", "light"]}}"#,
        ],
    );
    check_snapshot(
        &f,
        "store-search-page",
        &["search", "users", "--limit", "2", "--offset", "1"],
    );
}

#[tokio::test]
async fn json_has_whole_items() {
    let f = Fixture::new().await;
    let ls = f.run(&["ls", "--json"]).json();
    assert_eq!(
        ls["namespaces"],
        json!([["docs"], ["users", "u1"], ["users", "u2"]])
    );
    let got = f.run(&["--json", "get", "users/u1", "prefs"]).json();
    assert_eq!(got["item"]["namespace"], json!(["users", "u1"]));
    assert_eq!(got["item"]["value"], json!({"theme": "dark", "lang": "en"}));
    assert!(got["item"]["created_at"].as_str().unwrap().ends_with('Z'));

    let hits = f
        .run(&["search", "users", "--filter", r#"{"lang": "fr"}"#, "--json"])
        .json();
    let items = hits["items"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["key"], "prefs");
    assert_eq!(items[0]["namespace"], json!(["users", "u2"]));
    assert_eq!(items[0]["score"], json!(null));
    // Reading refreshes no time-to-live: the session's expiry is as it was put.
    let expiry = |f: &Fixture| {
        f.run(&["--json", "get", "users/u2", "session"]).json()["item"]["expires_at"].clone()
    };
    let before = expiry(&f);
    assert!(before.is_string(), "{before}");
    std::thread::sleep(Duration::from_millis(20));
    f.run(&["search", "users", "--json"]).json();
    f.run(&["search", "users"]).ok();
    assert_eq!(expiry(&f), before);
    // The readme's text is whole, not cut to the width.
    let docs = f.run(&["search", "docs", "--json"]).json();
    let text = docs["items"][0]["value"]["text"].as_str().unwrap();
    assert_eq!(text.len(), 4 * 56);
}

#[tokio::test]
async fn rm_deletes_one_item() {
    let f = Fixture::new().await;
    let out = f.run(&["rm", "users/u1", "prefs"]).ok().to_string();
    assert_eq!(out, "deleted `prefs` from namespace users/u1\n");
    let err = f
        .run(&["get", "users/u1", "prefs"])
        .fails(code(exit::UNKNOWN_ITEM))
        .to_string();
    assert!(
        err.contains("no item `prefs` in namespace users/u1"),
        "{err}"
    );
    f.run(&["rm", "users/u1", "prefs"])
        .fails(code(exit::UNKNOWN_ITEM));
    // The rest is still there.
    let store = SqliteStore::open(&f.db).unwrap();
    let left = store
        .search(&[], stategraph::store::SearchQuery::new().limit(100))
        .await
        .unwrap();
    assert_eq!(left.len(), 4);
}

#[tokio::test]
async fn bad_filters_and_namespaces_are_usage_errors() {
    let f = Fixture::new().await;
    let err = f
        .run(&["search", "users", "--filter", "{theme: dark"])
        .fails(code(exit::USAGE))
        .to_string();
    assert!(
        err.contains("bad --filter") && err.contains("not JSON"),
        "{err}"
    );
    let err = f
        .run(&["search", "users", "--filter", r#"{"score": {"$near": 3}}"#])
        .fails(code(exit::USAGE))
        .to_string();
    assert!(err.contains("$near"), "{err}");
    let err = f
        .run(&["get", "users/u.1", "prefs"])
        .fails(code(exit::USAGE))
        .to_string();
    assert!(
        err.contains("`.`") && err.contains("labels separated by `/`"),
        "{err}"
    );
    let err = f
        .run(&["get", "users//u1", "prefs"])
        .fails(code(exit::USAGE))
        .to_string();
    assert!(err.contains("empty"), "{err}");
}

#[test]
fn a_missing_file_or_one_without_store_tables_is_exit_3_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.sqlite");
    let path = missing.to_str().unwrap();
    let err = stategraph(&["--db", path, "store", "ls"])
        .fails(code(exit::MISSING_DATABASE))
        .to_string();
    assert!(err.contains("does not exist"), "{err}");
    assert!(!missing.exists());

    // A saver's file without a store: no store tables are added.
    let saver_db = dir.path().join("threads.sqlite");
    drop(stategraph_sqlite::SqliteSaver::open(&saver_db).unwrap());
    let before = std::fs::read(&saver_db).unwrap();
    let err = stategraph(&["--db", saver_db.to_str().unwrap(), "store", "search", ""])
        .fails(code(exit::MISSING_DATABASE))
        .to_string();
    assert!(err.contains("has no stategraph store tables"), "{err}");
    assert_eq!(std::fs::read(&saver_db).unwrap(), before);
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn a_postgres_store_is_read_the_same_way() {
    let Some(url) = stategraph_tests::servers::postgres_url(module_path!()) else {
        return;
    };
    let schema = stategraph_tests::servers::fresh_schema("cli_store");
    let store = stategraph_postgres::PostgresStore::connect_with(
        &url,
        stategraph_postgres::PostgresOptions::new().schema(&schema),
    )
    .await
    .unwrap();
    fill(&store).await;
    drop(store);
    let run = |args: &[&str]| {
        let mut all = vec!["--url", &url, "--schema", &schema, "store"];
        all.extend_from_slice(args);
        stategraph(&all)
    };
    let ls = run(&["ls", "--json"]).json();
    assert_eq!(
        ls["namespaces"],
        json!([["docs"], ["users", "u1"], ["users", "u2"]])
    );
    let hits = run(&[
        "search",
        "users",
        "--filter",
        r#"{"theme": "dark"}"#,
        "--json",
    ])
    .json();
    assert_eq!(hits["items"][0]["key"], "prefs");
    run(&["rm", "users/u1", "prefs"]).ok();
    run(&["get", "users/u1", "prefs"]).fails(code(exit::UNKNOWN_ITEM));
    // A schema without store tables is exit 3, and is not given any.
    let empty = stategraph_tests::servers::fresh_schema("cli_empty");
    let err = stategraph(&["--url", &url, "--schema", &empty, "store", "ls"])
        .fails(code(exit::MISSING_DATABASE))
        .to_string();
    assert!(err.contains("has no stategraph store tables"), "{err}");
    let (url2, schema2) = (url.clone(), schema.clone());
    tokio::task::spawn_blocking(move || stategraph_tests::servers::drop_schema(&url2, &schema2))
        .await
        .unwrap();
}
