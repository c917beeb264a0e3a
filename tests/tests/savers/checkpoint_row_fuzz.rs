//! Row fuzz: a thread written by a real run (loop steps with appended deltas, then an
//! interrupt with its pending write) is copied, one column of one of its stored rows
//! is damaged (mutated JSON, cut text, extreme integers; see
//! `stategraph_tests::rows`), and the copy is read back through the SQLite and the
//! PostgreSQL saver's row decoding, `channel_values`, `get_state`, the history and a
//! resume. Each gives `Ok` or an error that displays, never a panic.

use std::sync::Arc;

use serde_json::json;
use stategraph::checkpoint::{CheckpointConfig, CheckpointSaver, ListOptions, channel_values};
use stategraph::prelude::*;
use stategraph_postgres::{PostgresOptions, PostgresSaver};
use stategraph_sqlite::SqliteSaver;
use stategraph_tests::rows::{Case, Damage};
use stategraph_tests::servers;

#[derive(GraphState, Clone, Debug, Default)]
struct Ticket {
    #[reducer(append)]
    log: Vec<String>,
    #[reducer(add)]
    steps: u32,
}

#[node]
fn work(t: &Ticket) -> TicketUpdate {
    Ticket::update()
        .log([format!("worked {}", t.steps + 1)])
        .steps(1)
}

#[node]
fn approve(_t: &Ticket, ctx: &NodeContext) -> Result<TicketUpdate, NodeError> {
    let close: bool = ctx.interrupt(json!({ "question": "close?" }))?;
    Ok(Ticket::update().log([if close { "closed" } else { "reopened" }]))
}

fn graph(saver: Arc<dyn CheckpointSaver>) -> CompiledGraph<Ticket> {
    StateGraph::<Ticket>::new()
        .add_node(work)
        .add_node(approve)
        .add_edge(START, work)
        .add_conditional_edges(
            work,
            |t: &Ticket| {
                if t.steps < 6 {
                    Route::to(work)
                } else {
                    Route::to(approve)
                }
            },
            (work, approve),
        )
        .add_edge(approve, END)
        .compile_with(CompileOptions::new().shared_checkpointer(saver))
        .unwrap()
}

const BASE: &str = "base";

/// Writes the base thread: six loop steps, then paused at the approval.
async fn write_base(saver: Arc<dyn CheckpointSaver>) {
    let paused = graph(saver)
        .invoke(Ticket::update(), &RunConfig::new().thread(BASE))
        .await
        .unwrap();
    assert_eq!(paused.interrupts.len(), 1);
}

/// Fails the test if an error does not display.
fn clean<T, E: std::fmt::Display>(result: Result<T, E>) -> Option<T> {
    match result {
        Ok(v) => Some(v),
        Err(e) => {
            assert!(
                !e.to_string().trim().is_empty(),
                "an error without a message"
            );
            None
        }
    }
}

/// Reads `thread` back every way there is, then resumes it.
async fn exercise(saver: Arc<dyn CheckpointSaver>, thread: &str) {
    let config = CheckpointConfig::thread(thread);
    clean(saver.get_tuple(&config).await);
    clean(saver.list_threads().await);
    if let Some(history) = clean(saver.list(&config, &ListOptions::new()).await) {
        for tuple in &history {
            clean(saver.get_tuple(&tuple.config).await);
            clean(channel_values(saver.as_ref(), tuple).await);
        }
    }
    let g = graph(saver);
    let run = RunConfig::new().thread(thread).recursion_limit(25);
    clean(g.get_state(&run).await);
    clean(g.get_state_history(&run, &ListOptions::new()).await);
    clean(g.invoke(Command::resume(true), &run).await);
    clean(g.invoke(None, &run).await);
}

/// Cases per saver.
const CASES: u64 = 160;

#[tokio::test]
async fn damaged_sqlite_rows_never_panic_the_saver_or_the_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fuzz.db");
    let saver: Arc<dyn CheckpointSaver> = Arc::new(SqliteSaver::open(&path).unwrap());
    write_base(saver.clone()).await;
    let raw = rusqlite::Connection::open(&path).unwrap();
    let mut damaged = 0;
    for seed in 0..CASES {
        let thread = format!("case-{seed}");
        saver.copy_thread(BASE, &thread).await.unwrap();
        let case = Case::new(seed);
        let (table, column) = (case.column.table, case.column.column);
        let rows: Vec<(i64, Option<String>)> = raw
            .prepare(&format!(
                "SELECT rowid, CAST({column} AS TEXT) FROM {table} WHERE thread_id = ?1 ORDER BY rowid"
            ))
            .unwrap()
            .query_map([&thread], |row| Ok((row.get(0)?, row.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        if let Some((rowid, original)) = rows.get(case.row % rows.len().max(1)) {
            let sql = format!("UPDATE OR IGNORE {table} SET {column} = ?1 WHERE rowid = ?2");
            let changed = match case.damage(original.as_deref()) {
                Damage::Text(text) => raw.execute(&sql, (text, rowid)),
                Damage::Integer(n) => raw.execute(&sql, (n, rowid)),
            }
            .unwrap();
            damaged += changed;
        }
        exercise(saver.clone(), &thread).await;
        saver.delete_thread(&thread).await.unwrap();
    }
    println!("sqlite: {damaged} of {CASES} cases damaged a row");
    assert!(damaged as u64 > CASES / 2, "{damaged} of {CASES}");
}

#[tokio::test]
async fn damaged_postgres_rows_never_panic_the_saver_or_the_runtime() {
    let Some(url) = servers::postgres_url(module_path!()) else {
        return;
    };
    let schema = servers::fresh_schema("rowfuzz");
    let saver: Arc<dyn CheckpointSaver> = Arc::new(
        PostgresSaver::connect_with(&url, PostgresOptions::new().schema(&schema))
            .await
            .unwrap(),
    );
    write_base(saver.clone()).await;
    let (raw, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    raw.batch_execute(&format!("SET search_path TO {schema}"))
        .await
        .unwrap();
    let mut damaged = 0;
    for seed in 0..CASES {
        let thread = format!("case-{seed}");
        saver.copy_thread(BASE, &thread).await.unwrap();
        let case = Case::new(seed);
        let (table, column) = (case.column.table, case.column.column);
        let rows = raw
            .query(
                &format!(
                    "SELECT ctid::text, {column}::text FROM {table} WHERE thread_id = $1 ORDER BY ctid"
                ),
                &[&thread],
            )
            .await
            .unwrap();
        if let Some(row) = rows.get(case.row % rows.len().max(1)) {
            let (ctid, original): (String, Option<String>) = (row.get(0), row.get(1));
            let sql = format!("UPDATE {table} SET {column} = $1 WHERE ctid = $2::text::tid");
            let changed = match case.damage(original.as_deref()) {
                // Text columns reject NUL; such a case damages nothing.
                Damage::Text(text) if text.contains('\0') => Ok(0),
                Damage::Text(text) => raw.execute(&sql, &[&text, &ctid]).await,
                Damage::Integer(n) => raw.execute(&sql, &[&n, &ctid]).await,
            };
            // A damaged key that collides with another row's changes nothing.
            let changed = match changed {
                Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION) => 0,
                other => other.unwrap(),
            };
            damaged += changed;
        }
        exercise(saver.clone(), &thread).await;
        saver.delete_thread(&thread).await.unwrap();
    }
    println!("postgres: {damaged} of {CASES} cases damaged a row");
    assert!(damaged > CASES / 2, "{damaged} of {CASES}");
    drop(saver);
    tokio::task::spawn_blocking(move || servers::drop_schema(&url, &schema))
        .await
        .unwrap();
}
