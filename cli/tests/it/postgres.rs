//! The same inspection against a PostgreSQL database written by a real run (in a
//! schema of its own). Needs a server: set `STATEGRAPH_POSTGRES_URL`
//! (e.g. postgres://stategraph:stategraph@127.0.0.1:5432/stategraph); without it the
//! test is skipped with a notice, except under `CI=true`, where it fails.

use crate::common;

use common::{WORK_STEPS, get, stategraph, studio, write_tickets};
use serde_json::json;
use stategraph::checkpoint::new_checkpoint_id;
use stategraph_cli::exit;
use stategraph_postgres::{PostgresOptions, PostgresSaver};

const URL_VAR: &str = "STATEGRAPH_POSTGRES_URL";

fn server() -> Option<String> {
    match std::env::var(URL_VAR) {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "{URL_VAR} is not set, and CI=true requires the PostgreSQL tests to run"
            );
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "notice: cli postgres test skipped: set {URL_VAR}=postgres://user:password@host:5432/database to run it"
            );
            None
        }
    }
}

#[tokio::test]
async fn inspects_and_deletes_threads_in_a_postgres_schema() {
    let Some(url) = server() else { return };
    let schema = format!("cli_{}", new_checkpoint_id());
    let saver = PostgresSaver::connect_with(&url, PostgresOptions::new().schema(&schema))
        .await
        .unwrap();
    write_tickets(saver).await;
    let cli = |args: &[&str]| {
        let mut all = vec!["--url", url.as_str(), "--schema", schema.as_str()];
        all.extend_from_slice(args);
        stategraph(&all)
    };

    let threads = cli(&["threads", "--json"]).json();
    assert_eq!(
        threads["threads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| (
                t["thread_id"].clone(),
                t["checkpoint_count"].clone(),
                t["status"].clone()
            ))
            .collect::<Vec<_>>(),
        [
            (
                json!("ticket-done"),
                json!(3 + WORK_STEPS),
                json!("finished")
            ),
            (
                json!("ticket-open"),
                json!(2 + WORK_STEPS),
                json!("interrupted")
            ),
        ]
    );

    let shown = cli(&["show", "ticket-open", "--json"]).json();
    let mut log = vec![json!("triaged")];
    log.extend((1..=WORK_STEPS).map(|n| json!(format!("worked {n}"))));
    assert_eq!(shown["values"]["log"], json!(log));
    assert_eq!(shown["interrupts"][0]["answered"], false);

    let history = cli(&["history", "ticket-done", "--json"]).json();
    let latest = history["checkpoints"][0]["checkpoint_id"].as_str().unwrap();
    let before = history["checkpoints"][1]["checkpoint_id"].as_str().unwrap();
    let diff = cli(&["diff", "ticket-done", before, latest, "--json"]).json();
    assert_eq!(diff["changed"].as_array().unwrap().len(), 1);
    assert_eq!(diff["changed"][0]["channel"], "log");

    let err = cli(&["show", "ticket-nope"])
        .fails(i32::from(exit::UNKNOWN_THREAD))
        .to_string();
    assert!(err.contains("`ticket-nope` not found"), "{err}");
    if let Some((_, after_scheme)) = url.split_once("://")
        && let Some((user_info, _)) = after_scheme.split_once('@')
        && let Some((_, password)) = user_info.split_once(':')
        && !password.is_empty()
    {
        assert!(!err.contains(&format!(":{password}@")), "{err}");
        assert!(err.contains(":***@"), "{err}");
    }

    assert_eq!(
        cli(&["delete", "ticket-done", "--yes"]).ok(),
        format!(
            "deleted thread ticket-done ({} checkpoints)\n",
            3 + WORK_STEPS
        )
    );
    let left = cli(&["threads", "--json"]).json();
    assert_eq!(left["threads"].as_array().unwrap().len(), 1);
    assert_eq!(left["threads"][0]["thread_id"], "ticket-open");
    cli(&["delete", "ticket-open", "--yes"]).ok();
}

/// Whether `schema` exists in the database at `url`.
async fn schema_exists(url: &str, schema: &str) -> bool {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM information_schema.schemata WHERE schema_name = $1)",
            &[&schema],
        )
        .await
        .unwrap()
        .get(0)
}

#[tokio::test]
async fn a_schema_without_tables_is_exit_3_and_is_not_created() {
    let Some(url) = server() else { return };
    let schema = format!("cli_missing_{}", new_checkpoint_id());
    let err = stategraph(&["--url", &url, "--schema", &schema, "threads"])
        .fails(i32::from(exit::MISSING_DATABASE))
        .to_string();
    assert!(
        err.contains("has no stategraph tables") && err.contains(&schema),
        "{err}"
    );
    let exists = schema_exists(&url, &schema).await;
    assert!(!exists, "inspecting created schema {schema}");
}

/// The same over TLS (`sslmode=verify-full` with the server's CA): the check for the
/// tables connects as the saver does, so it still refuses rather than letting the
/// saver create them. Runs where the server has TLS (`STATEGRAPH_POSTGRES_TLS_CA`, as
/// `.ci/run` sets it).
#[tokio::test]
async fn over_tls_a_schema_without_tables_is_still_refused() {
    let Some(url) = server() else { return };
    let Some(ca) = std::env::var("STATEGRAPH_POSTGRES_TLS_CA")
        .ok()
        .filter(|v| !v.trim().is_empty())
    else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "STATEGRAPH_POSTGRES_TLS_CA is not set, and CI=true requires the TLS tests to run"
        );
        eprintln!(
            "notice: cli TLS test skipped: set STATEGRAPH_POSTGRES_TLS_CA to the server's CA"
        );
        return;
    };
    let schema = format!("cli_missing_tls_{}", new_checkpoint_id());
    let sep = if url.contains('?') { '&' } else { '?' };
    let tls_url = format!("{url}{sep}sslmode=verify-full&sslrootcert={ca}");
    let err = stategraph(&["--url", &tls_url, "--schema", &schema, "threads"])
        .fails(i32::from(exit::MISSING_DATABASE))
        .to_string();
    assert!(
        err.contains("has no stategraph tables") && err.contains(&schema),
        "{err}"
    );
    let exists = schema_exists(&url, &schema).await;
    assert!(!exists, "inspecting over TLS created schema {schema}");
}

#[tokio::test]
async fn studio_serves_the_threads_of_a_postgres_schema() {
    let Some(url) = server() else { return };
    let schema = format!("cli_{}", new_checkpoint_id());
    let saver = PostgresSaver::connect_with(&url, PostgresOptions::new().schema(&schema))
        .await
        .unwrap();
    let graph = write_tickets(saver).await;
    let (_served, addr) = studio(&["--url", url.as_str(), "--schema", schema.as_str()]);
    let (status, _, body) = get(&addr, "/studio/api/threads?status=interrupted");
    assert_eq!(status, 200, "{body}");
    let list: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(list["total"], 1, "{list}");
    assert_eq!(list["threads"][0]["thread_id"], "ticket-open");
    let (_, _, body) = get(&addr, "/studio/api/threads/ticket-open");
    let thread: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(thread["graph"]["version"], json!(graph.graph_version()));
    let (_, _, body) = get(&addr, "/studio/api/info");
    let info: serde_json::Value = serde_json::from_str(&body).unwrap();
    let source = info["source"].as_str().unwrap();
    assert!(source.contains(&schema), "{source}");
    assert!(
        !source.contains(":sg_srv@") || source.contains("***"),
        "{source}"
    );
}
