//! Every failure is a clear message on standard error with its own exit code, and
//! inspecting never creates or changes a database.

use crate::common;

use common::{Fixture, stategraph, stategraph_with_env};
use stategraph::prelude::RunConfig;
use stategraph_cli::{URL_ENV, exit};

fn code(c: u8) -> i32 {
    i32::from(c)
}

#[test]
fn a_missing_database_file_is_exit_3_and_is_not_created() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("nope.sqlite");
    let path = db.to_str().unwrap();
    for args in [
        vec!["--db", path, "threads"],
        vec!["--db", path, "show", "t"],
        vec!["--db", path, "delete", "t", "--yes"],
    ] {
        let err = stategraph(&args)
            .fails(code(exit::MISSING_DATABASE))
            .to_string();
        assert!(
            err.contains(path) && err.contains("does not exist"),
            "{err}"
        );
        assert!(!db.exists(), "inspecting created {path}");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn a_file_that_is_not_a_stategraph_database_is_exit_3_and_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "just some notes, not a database at all\n".repeat(50)).unwrap();
    let err = stategraph(&["--db", text.to_str().unwrap(), "threads"])
        .fails(code(exit::MISSING_DATABASE))
        .to_string();
    assert!(err.contains("is not a stategraph database"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&text).unwrap(),
        "just some notes, not a database at all\n".repeat(50)
    );

    // A SQLite file of another application: its tables are not touched.
    let other = dir.path().join("other.sqlite");
    {
        let conn = rusqlite::Connection::open(&other).unwrap();
        conn.execute_batch("CREATE TABLE orders (id INTEGER PRIMARY KEY);")
            .unwrap();
    }
    let err = stategraph(&["--db", other.to_str().unwrap(), "threads"])
        .fails(code(exit::MISSING_DATABASE))
        .to_string();
    assert!(err.contains("no `stategraph_checkpoints` table"), "{err}");
    let conn = rusqlite::Connection::open(&other).unwrap();
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(tables, ["orders"]);

    let err = stategraph(&["--db", dir.path().to_str().unwrap(), "threads"])
        .fails(code(exit::MISSING_DATABASE))
        .to_string();
    assert!(err.contains("not a file"), "{err}");
}

/// A 0-byte file is what SQLite takes for a database to create; the CLI, which only
/// reads, says it is empty and leaves it so.
#[test]
fn an_empty_file_is_exit_3_saying_it_is_empty_and_stays_empty() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, b"").unwrap();
    for command in [&["threads"][..], &["history", "t"], &["show", "t"]] {
        let mut args = vec!["--db", empty.to_str().unwrap()];
        args.extend_from_slice(command);
        let err = stategraph(&args)
            .fails(code(exit::MISSING_DATABASE))
            .to_string();
        assert!(err.contains("is empty (0 bytes)"), "{err}");
        assert_eq!(std::fs::metadata(&empty).unwrap().len(), 0);
    }
}

#[tokio::test]
async fn an_unknown_thread_is_exit_5_for_every_command() {
    let f = Fixture::tickets().await;
    for args in [
        vec!["history", "ticket-nope"],
        vec!["show", "ticket-nope"],
        vec!["show", "ticket-nope", "0006"],
        vec!["diff", "ticket-nope", "a", "b"],
        vec!["delete", "ticket-nope", "--yes"],
        vec!["show", "ticket-nope", "--json"],
    ] {
        let err = f.run(&args).fails(code(exit::UNKNOWN_THREAD)).to_string();
        assert!(
            err.contains("thread `ticket-nope` not found") && err.contains("stategraph threads"),
            "{args:?}: {err}"
        );
    }
}

#[tokio::test]
async fn an_unknown_or_ambiguous_checkpoint_is_exit_6() {
    let f = Fixture::tickets().await;
    let history = f.run(&["history", "ticket-open", "--json"]).json();
    let latest = history["checkpoints"][0]["checkpoint_id"]
        .as_str()
        .unwrap()
        .to_string();

    let err = f
        .run(&["show", "ticket-open", "ffffffff"])
        .fails(code(exit::UNKNOWN_CHECKPOINT))
        .to_string();
    assert!(
        err.contains("has no checkpoint `ffffffff`")
            && err.contains("stategraph history ticket-open"),
        "{err}"
    );
    let err = f
        .run(&["diff", "ticket-open", &latest, "zzz"])
        .fails(code(exit::UNKNOWN_CHECKPOINT))
        .to_string();
    assert!(err.contains("`zzz`"), "{err}");
    // Every id of the thread starts with the same time stamp digits: the error lists
    // each candidate by a short id that does name it.
    let err = f
        .run(&["show", "ticket-open", &latest[..4]])
        .fails(code(exit::UNKNOWN_CHECKPOINT))
        .to_string();
    assert!(
        err.contains(&format!("`{}` names 14 checkpoints", &latest[..4]))
            && err.contains("give one of these short ids"),
        "{err}"
    );
    let listed = err.split(": ").nth(2).unwrap().split(';').next().unwrap();
    let candidates: Vec<&str> = listed.split(", ").collect();
    assert_eq!(candidates.len(), 14, "{err}");
    for candidate in candidates {
        let short = candidate.split(' ').next().unwrap();
        let shown = f.run(&["show", "ticket-open", short, "--json"]).json();
        assert!(
            shown["checkpoint_id"].as_str().unwrap().ends_with(short),
            "{candidate}"
        );
        assert!(
            candidate.contains(&format!("(step {} at ", shown["step"])),
            "{candidate}"
        );
    }
    // `@STEP` for a step the thread never reached, or not a number.
    for name in ["@99", "@x", "@"] {
        f.run(&["show", "ticket-open", name])
            .fails(code(exit::UNKNOWN_CHECKPOINT));
    }
    // A fork from an earlier checkpoint gives a second checkpoint of its step: `@STEP`
    // then lists both, by short ids that name each.
    let graph = common::ticket_graph(stategraph_sqlite::SqliteSaver::open(&f.db).unwrap());
    let third = history["checkpoints"][3]["checkpoint_id"].as_str().unwrap();
    let step = history["checkpoints"][2]["step"].as_i64().unwrap();
    let fork = graph
        .update_state(
            &RunConfig::new().thread("ticket-open").checkpoint(third),
            common::Ticket::update().title("forked"),
        )
        .await
        .unwrap();
    let fork_id = fork.checkpoint_id.unwrap();
    let err = f
        .run(&["show", "ticket-open", &format!("@{step}")])
        .fails(code(exit::UNKNOWN_CHECKPOINT))
        .to_string();
    assert!(
        err.contains(&format!("`@{step}` names 2 checkpoints")),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "{} (step {step} at ",
            &fork_id[fork_id.len() - 8..]
        )),
        "{err}"
    );
    let shown = f
        .run(&[
            "show",
            "ticket-open",
            &fork_id[fork_id.len() - 8..],
            "--json",
        ])
        .json();
    assert_eq!(shown["values"]["title"], "forked");

    // A checkpoint of another thread is not one of this thread's.
    let other = f.run(&["history", "ticket-done", "--json"]).json();
    let foreign = other["checkpoints"][0]["checkpoint_id"].as_str().unwrap();
    f.run(&["show", "ticket-open", foreign])
        .fails(code(exit::UNKNOWN_CHECKPOINT));
}

#[cfg(feature = "postgres")]
#[test]
fn a_malformed_or_unreachable_url_is_exit_4_and_hides_the_password() {
    let err = stategraph(&["--url", "definitely not a url", "threads"])
        .fails(code(exit::BAD_URL))
        .to_string();
    assert!(err.contains("not a PostgreSQL connection URL"), "{err}");

    // Nothing listens on port 1.
    let err = stategraph(&[
        "--url",
        "postgres://someone:hunter2@127.0.0.1:1/app",
        "threads",
    ])
    .fails(code(exit::BAD_URL))
    .to_string();
    assert!(err.contains("cannot connect to PostgreSQL"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
}

#[test]
fn a_command_line_without_a_store_or_with_both_is_a_usage_error() {
    let err = stategraph(&["threads"])
        .fails(code(exit::USAGE))
        .to_string();
    assert!(
        err.contains("--db PATH") && err.contains("--url") && err.contains(URL_ENV),
        "{err}"
    );
    stategraph(&["--db", "a.sqlite", "--url", "postgres://h/db", "threads"])
        .fails(code(exit::USAGE));
    stategraph(&["--db", "a.sqlite", "--schema", "s", "threads"]).fails(code(exit::USAGE));
    stategraph(&["--db", "a.sqlite", "show"]).fails(code(exit::USAGE));
    stategraph(&["--db", "a.sqlite", "frobnicate"]).fails(code(exit::USAGE));
    stategraph(&["--db", "a.sqlite", "history", "t", "--limit", "0"]).fails(code(exit::USAGE));
    stategraph(&["--db", "a.sqlite", "--width", "0", "threads"]).fails(code(exit::USAGE));
    assert!(!std::path::Path::new("a.sqlite").exists());
}

#[tokio::test]
async fn the_url_can_come_from_the_environment_and_an_explicit_db_wins_over_it() {
    // The URL from the environment is used when the command line names no store.
    let err = stategraph_with_env(&["threads"], &[(URL_ENV, "definitely not a url")])
        .fails(code(exit::BAD_URL))
        .to_string();
    if cfg!(feature = "postgres") {
        assert!(err.contains("not a PostgreSQL connection URL"), "{err}");
    } else {
        assert!(err.contains("without PostgreSQL support"), "{err}");
    }
    // --db on the command line is taken over it.
    let f = Fixture::tickets().await;
    let db = f.db.to_str().unwrap();
    let threads = stategraph_with_env(
        &["--db", db, "threads", "--json"],
        &[(URL_ENV, "postgres://nobody@127.0.0.1:1/none")],
    )
    .json();
    assert_eq!(threads["threads"].as_array().unwrap().len(), 2);
    // --help names the variable.
    let help = stategraph(&["--help"]);
    assert_eq!(help.code, 0);
    assert!(
        help.stdout.contains(&format!("[env: {URL_ENV}")),
        "{}",
        help.stdout
    );
}

/// Built without the `postgres` feature (`cargo test -p stategraph-cli
/// --no-default-features`), a URL is refused with the way to get PostgreSQL support,
/// and never shows the password.
#[cfg(not(feature = "postgres"))]
#[test]
fn without_the_postgres_feature_a_url_says_to_enable_it() {
    let err = stategraph(&["--url", "postgres://me:hunter2@db/app", "threads"])
        .fails(code(exit::BAD_URL))
        .to_string();
    assert!(
        err.contains("built without PostgreSQL support")
            && err.contains("`postgres` feature")
            && err.contains("postgres://me:***@db/app"),
        "{err}"
    );
    assert!(!err.contains("hunter2"), "{err}");
}

/// A listener that accepts connections and never answers, as a hung server or a port
/// that is not PostgreSQL does; its address.
#[cfg(feature = "postgres")]
fn silent_server() -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream);
        }
    });
    addr
}

#[cfg(feature = "postgres")]
#[test]
fn a_server_that_never_answers_is_exit_4_after_the_urls_connect_timeout() {
    let addr = silent_server();
    let started = std::time::Instant::now();
    let err = stategraph(&[
        "--url",
        &format!("postgres://someone:hunter2@{addr}/app?connect_timeout=1"),
        "threads",
    ])
    .fails(code(exit::BAD_URL))
    .to_string();
    let took = started.elapsed();
    assert!(
        took < std::time::Duration::from_secs(8),
        "took {took:?}: {err}"
    );
    assert!(err.contains("startup handshake"), "{err}");
    assert!(err.contains("did not finish within 1 s"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
}
