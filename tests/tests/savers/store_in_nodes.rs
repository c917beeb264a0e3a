//! Nodes reach the store with `ctx.store()`:
//! - a graph compiled without one fails the run with a clear error naming the fix
//!   (no panic);
//! - with one, what a node writes on one thread another thread's node reads back,
//!   typed, and the caller's handle (`shared_store`) sees it too;
//! - store writes are not checkpointed: a resumed node writes again, by key, and the
//!   store holds one item.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use stategraph::RunError;
use stategraph::checkpoint::InMemorySaver;
use stategraph::prelude::*;
use stategraph::store::{InMemoryStore, NamespaceQuery, Store, StoreExt};

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
struct Prefs {
    drink: String,
}

#[derive(GraphState, Clone, Debug, Default)]
struct Chat {
    user: String,
    said: Option<String>,
    answer: Option<String>,
}

/// Remembers a stated drink, or answers with the remembered one.
#[node]
async fn remember(c: &Chat, ctx: &NodeContext) -> Result<ChatUpdate, NodeError> {
    let store = ctx.store()?;
    let ns = ["users", c.user.as_str()];
    if let Some(drink) = c.said.as_deref().and_then(|s| s.strip_prefix("I like ")) {
        let prefs = Prefs {
            drink: drink.to_owned(),
        };
        store.put_typed(&ns, "prefs", &prefs).await?;
        return Ok(Chat::update().answer(Some(format!("noted: {drink}"))));
    }
    let prefs: Option<Prefs> = store.get_typed(&ns, "prefs").await?;
    let answer = match prefs {
        Some(p) => format!("here is your {}", p.drink),
        None => "what would you like?".to_owned(),
    };
    Ok(Chat::update().answer(Some(answer)))
}

fn graph(options: CompileOptions) -> CompiledGraph<Chat> {
    StateGraph::<Chat>::new()
        .add_node(remember)
        .add_edge(START, remember)
        .compile_with(options.checkpointer(InMemorySaver::new()))
        .expect("compiles")
}

fn said(user: &str, text: Option<&str>) -> ChatUpdate {
    Chat::update().user(user).said(text.map(String::from))
}

#[tokio::test]
async fn a_node_without_a_store_gets_a_clear_error() {
    let g = graph(CompileOptions::new());
    let err = g
        .invoke(said("u1", None), &RunConfig::new().thread("t1"))
        .await
        .expect_err("no store is configured");
    let RunError::Node { node, source, .. } = &err else {
        panic!("expected a node error, got {err:?}");
    };
    assert_eq!(node, "remember");
    let message = source.to_string();
    assert!(
        message.contains("no store configured for node `remember`")
            && message.contains("CompileOptions::store(..)"),
        "{message}"
    );
}

#[tokio::test]
async fn a_preference_written_on_one_thread_is_read_on_another() {
    let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
    let g = graph(CompileOptions::new().shared_store(store.clone()));

    let first = g
        .invoke(
            said("u1", Some("I like tea")),
            &RunConfig::new().thread("t1"),
        )
        .await
        .expect("first thread runs");
    assert_eq!(first.values.answer.as_deref(), Some("noted: tea"));

    let second = g
        .invoke(said("u1", None), &RunConfig::new().thread("t2"))
        .await
        .expect("second thread runs");
    assert_eq!(second.values.answer.as_deref(), Some("here is your tea"));

    // Another user has no preference; the caller's handle sees what the node wrote.
    let other = g
        .invoke(said("u2", None), &RunConfig::new().thread("t3"))
        .await
        .expect("third thread runs");
    assert_eq!(other.values.answer.as_deref(), Some("what would you like?"));
    let prefs: Option<Prefs> = store.get_typed(&["users", "u1"], "prefs").await.unwrap();
    assert_eq!(
        prefs,
        Some(Prefs {
            drink: "tea".into()
        })
    );
}

#[derive(GraphState, Clone, Debug, Default)]
struct Visit {
    user: String,
    approved: bool,
}

/// Writes before pausing, so a resume runs the write again.
#[node]
async fn log_then_ask(v: &Visit, ctx: &NodeContext) -> Result<VisitUpdate, NodeError> {
    let store = ctx.store()?;
    store
        .put(
            &["visits", v.user.as_str()],
            "last",
            serde_json::json!({"attempt": ctx.attempt()}),
        )
        .await?;
    let approved: bool = ctx.interrupt("approve?")?;
    Ok(Visit::update().approved(approved))
}

#[tokio::test]
async fn store_writes_are_not_replayed_but_repeat_on_resume_by_key() {
    let store = InMemoryStore::new();
    let g = StateGraph::<Visit>::new()
        .add_node(log_then_ask)
        .add_edge(START, log_then_ask)
        .compile_with(
            CompileOptions::new()
                .checkpointer(InMemorySaver::new())
                .store(store.clone()),
        )
        .expect("compiles");
    let thread = RunConfig::new().thread("v1");
    let paused = g
        .invoke(Visit::update().user("u1"), &thread)
        .await
        .expect("pauses");
    assert_eq!(paused.interrupts.len(), 1);
    let first = store.get(&["visits", "u1"], "last").await.unwrap().unwrap();

    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let done = g
        .invoke(Command::resume(true), &thread)
        .await
        .expect("resumes");
    assert!(done.values.approved);
    // The node ran again on resume and wrote the same key again: one item, updated.
    let again = store.get(&["visits", "u1"], "last").await.unwrap().unwrap();
    assert_eq!(store.len(), 1);
    assert_eq!(again.created_at, first.created_at);
    assert!(again.updated_at > first.updated_at);
    let namespaces = store.list_namespaces(NamespaceQuery::new()).await.unwrap();
    assert_eq!(namespaces, [vec!["visits".to_string(), "u1".to_string()]]);
}
