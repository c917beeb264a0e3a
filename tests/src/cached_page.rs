//! The graph the durable node-cache tests run on each saver: one cached node that
//! "downloads" a page, counting its real calls.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use stategraph::cache::{CachePolicy, NodeCache};
use stategraph::checkpoint::CheckpointSaver;
use stategraph::prelude::*;

/// A page and what fetching it produced.
#[derive(GraphState, Clone, Debug, Default)]
pub struct Page {
    /// The input.
    pub url: String,
    /// How many fetches were applied (an `add` channel: a reused write adds again).
    #[reducer(add)]
    pub fetches: u32,
    /// The fetched body.
    pub body: String,
}

/// Real calls per url: tests running at once in one process count their own pages.
static DOWNLOADS: Mutex<Option<HashMap<String, usize>>> = Mutex::new(None);

/// How many times `download` really ran for `url` in this process.
pub fn downloads(url: &str) -> usize {
    let counts = DOWNLOADS.lock().unwrap_or_else(PoisonError::into_inner);
    counts
        .as_ref()
        .and_then(|c| c.get(url))
        .copied()
        .unwrap_or(0)
}

/// Reads only the url.
#[node(reads(url))]
pub fn download(p: &Page) -> PageUpdate {
    let mut counts = DOWNLOADS.lock().unwrap_or_else(PoisonError::into_inner);
    *counts
        .get_or_insert_with(HashMap::new)
        .entry(p.url.clone())
        .or_default() += 1;
    drop(counts);
    Page::update()
        .body(format!("<html>{}</html>", p.url))
        .fetches(1)
}

/// START → download → END, with `saver` as checkpointer and cache store.
///
/// # Panics
/// Never for this graph (it compiles).
pub fn graph<T: CheckpointSaver + NodeCache + Clone>(saver: T) -> CompiledGraph<Page> {
    StateGraph::<Page>::new()
        .add_node(download)
        .add_edge(START, download)
        .add_edge(download, END)
        .cache(download, CachePolicy::new())
        .compile_with(
            CompileOptions::new()
                .checkpointer(saver.clone())
                .cache(saver),
        )
        .expect("the cached page graph compiles")
}
