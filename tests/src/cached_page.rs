//! The graph the durable node-cache tests run on each saver: one cached node that
//! "downloads" a page, counting its real calls.

use std::sync::atomic::{AtomicUsize, Ordering};

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

static DOWNLOADS: AtomicUsize = AtomicUsize::new(0);

/// How many times `download` really ran in this process.
pub fn downloads() -> usize {
    DOWNLOADS.load(Ordering::SeqCst)
}

/// Reads only the url.
#[node(reads(url))]
pub fn download(p: &Page) -> PageUpdate {
    DOWNLOADS.fetch_add(1, Ordering::SeqCst);
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
