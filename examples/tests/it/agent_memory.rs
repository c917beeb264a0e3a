//! The agent example remembers a user's preference across threads through the store:
//! stated on one thread, it shapes the answer on a new thread for the same user, and
//! for no one else. The first thread's answer is unchanged by the memory.

use std::sync::Arc;

use serde_json::Value;
use stategraph::prelude::*;
use stategraph::store::{InMemoryStore, Store, StoreExt};
use stategraph_examples::agent::{self, Agent, Prefs};

const QUESTION: &str = "What should I pack for Oslo tomorrow, and what is 120 EUR in NOK?";
const PREFERENCE: &str = "From now on, give me temperatures in Fahrenheit.";
const FOLLOW_UP: &str = "What should I pack for Oslo tomorrow?";

async fn say(graph: &CompiledGraph<Agent>, thread: &str, user: &str, text: &str) -> Agent {
    let mut approve = |_: &Value| Ok(true);
    let mut show = |_: &[Message]| {};
    agent::turn(
        graph,
        &RunConfig::new().thread(thread),
        user,
        text,
        &mut approve,
        &mut show,
    )
    .await
    .expect("the turn runs")
}

#[tokio::test(flavor = "current_thread")]
async fn a_preference_stated_on_one_thread_is_used_on_the_next() {
    let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
    let graph = agent::build(store.clone()).expect("builds");

    let first = say(&graph, "trip", "u-42", QUESTION).await;
    assert_eq!(agent::model_calls(&first), 2);
    let answer = agent::last_answer(&first);
    assert!(
        answer.contains("7°C and rain") && answer.contains("1404 NOK"),
        "{answer}"
    );

    let noted = say(&graph, "trip", "u-42", PREFERENCE).await;
    assert!(agent::last_answer(&noted).starts_with("Noted: temperatures in Fahrenheit"));
    let fahrenheit = Prefs {
        temperature_unit: "fahrenheit".into(),
    };
    let stored: Option<Prefs> = store.get_typed(&["users", "u-42"], "prefs").await.unwrap();
    assert_eq!(stored.as_ref(), Some(&fahrenheit));

    // A new thread: its checkpoint starts empty, the store does not.
    let second = say(&graph, "trip-2", "u-42", FOLLOW_UP).await;
    assert_eq!(second.messages.len(), 4, "a fresh conversation");
    assert_eq!(second.prefs, Some(fahrenheit));
    let answer = agent::last_answer(&second);
    assert!(answer.contains("45°F and rain"), "{answer}");
    assert!(!answer.contains("°C"), "{answer}");

    // Another user on the same store has no such preference.
    let other = say(&graph, "trip-3", "u-7", FOLLOW_UP).await;
    assert_eq!(other.prefs, None);
    assert!(agent::last_answer(&other).contains("7°C and rain"));
}

#[tokio::test(flavor = "current_thread")]
async fn without_the_preference_a_new_thread_answers_in_celsius() {
    let graph = agent::build(Arc::new(InMemoryStore::new())).expect("builds");
    let fresh = say(&graph, "trip-2", "u-42", FOLLOW_UP).await;
    assert_eq!(fresh.prefs, None);
    assert!(agent::last_answer(&fresh).contains("7°C and rain"));
}
