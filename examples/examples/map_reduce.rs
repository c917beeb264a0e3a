//! Map-reduce with `Send`: count words in every document in parallel, fold the counts
//! with a custom reducer, then pick the most frequent words.
//!
//! `split` leaves the work to a router that emits one `Send(count_words, document)`
//! per document; the `count_words` tasks of that superstep run concurrently, and their
//! partial counts meet in the `counts` channel, whose reducer adds them up. `summarize`
//! runs once, after every mapper finished.
//!
//! Run it with `cargo run -p stategraph-examples --example map_reduce`.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use stategraph::prelude::*;

/// Adds a mapper's partial counts to the running totals (the `counts` reducer).
fn add_counts(totals: &mut BTreeMap<String, u64>, partial: BTreeMap<String, u64>) {
    for (word, n) in partial {
        *totals.entry(word).or_default() += n;
    }
}

#[derive(GraphState, Clone, Debug, Default)]
struct WordCount {
    documents: Vec<Document>,
    #[reducer(with = add_counts)]
    counts: BTreeMap<String, u64>,
    #[reducer(add)]
    words: u64,
    #[reducer(append)]
    mapped: Vec<String>,
    top: Vec<(String, u64)>,
}

/// One mapper's input: a `Send` payload, checkpointed like the state.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Document {
    name: String,
    text: String,
}

#[node]
fn split(state: &WordCount) -> Option<WordCountUpdate> {
    println!("split: {} documents to map", state.documents.len());
    None
}

/// The mapper: counts one document's words.
#[node]
async fn count_words(doc: &Document) -> WordCountUpdate {
    // Longer documents take longer, so mappers finish out of order; the reducer does
    // not care, and the run stays deterministic.
    tokio::time::sleep(Duration::from_millis(doc.text.len() as u64 / 4)).await;
    let mut partial = BTreeMap::new();
    let mut words = 0;
    for word in doc
        .text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        *partial.entry(word.to_lowercase()).or_default() += 1;
        words += 1;
    }
    println!("map: {:<10} {words:>3} words", doc.name);
    WordCount::update()
        .counts(partial)
        .words(words)
        .mapped([doc.name.clone()])
}

/// The final reduce: the five most frequent words longer than three letters.
#[node]
fn summarize(state: &WordCount) -> WordCountUpdate {
    let mut ranked: Vec<(String, u64)> = state
        .counts
        .iter()
        .filter(|(w, _)| w.len() > 3)
        .map(|(w, n)| (w.clone(), *n))
        .collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    ranked.truncate(5);
    WordCount::update().top(ranked)
}

fn map_each(state: &WordCount) -> Route<WordCount> {
    Route::sends(
        state
            .documents
            .iter()
            .map(|doc| stategraph::Send::new(count_words, doc.clone())),
    )
}

const CORPUS: &[(&str, &str)] = &[
    (
        "channels",
        "State is a set of channels. Each channel has a reducer, and the reducer \
         folds the writes of a superstep into the channel value.",
    ),
    (
        "supersteps",
        "A superstep runs every ready node concurrently. The writes of the superstep \
         are applied in a fixed order, so the same input gives the same state.",
    ),
    (
        "send",
        "Send schedules a node with its own input. A router can send one task per \
         item, and the tasks run in the same superstep.",
    ),
    (
        "threads",
        "With a checkpointer every superstep is saved, so a thread can be continued, \
         inspected, forked, or resumed after an interrupt.",
    ),
];

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let graph = StateGraph::<WordCount>::new()
        .add_node(split)
        .add_node(count_words)
        .add_node(summarize)
        .add_edge(START, split)
        .add_conditional_edges(split, map_each, [count_words])
        .add_edge(count_words, summarize)
        .add_edge(summarize, END)
        .compile()?;

    let documents: Vec<Document> = CORPUS
        .iter()
        .map(|(name, text)| Document {
            name: name.to_string(),
            text: text.to_string(),
        })
        .collect();
    let out = graph
        .invoke(WordCount::update().documents(documents), &RunConfig::new())
        .await?;

    let state = out.values;
    println!(
        "reduce: {} mappers in one superstep, merged in task order: {}",
        state.mapped.len(),
        state.mapped.join(", ")
    );
    println!(
        "total words: {}, distinct: {}",
        state.words,
        state.counts.len()
    );
    let top: Vec<String> = state.top.iter().map(|(w, n)| format!("{w}={n}")).collect();
    println!("top words: {}", top.join(", "));
    println!("supersteps: {}", out.steps);
    Ok(())
}
