//! A durable [`CheckpointSaver`](stategraph::checkpoint::CheckpointSaver) for
//! [stategraph] in one SQLite database file.
//!
//! Open a [`SqliteSaver`] on a file and pass it to
//! [`CompileOptions::checkpointer`](stategraph::CompileOptions::checkpointer): every
//! superstep of every thread is then saved to the file, and a later process that opens
//! the same file continues the threads where they stopped.
//!
//! ```
//! use stategraph::prelude::*;
//! use stategraph_sqlite::SqliteSaver;
//!
//! #[derive(GraphState, Clone, Debug, Default)]
//! struct Notes {
//!     #[reducer(append)]
//!     lines: Vec<String>,
//! }
//!
//! #[node]
//! fn note(_s: &Notes, _ctx: &NodeContext) -> NotesUpdate {
//!     Notes::update().lines(["hello".to_string()])
//! }
//!
//! fn graph(saver: SqliteSaver) -> Result<CompiledGraph<Notes>, stategraph::BuildError> {
//!     StateGraph::<Notes>::new()
//!         .add_node(note)
//!         .add_edge(START, note)
//!         .compile_with(CompileOptions::new().checkpointer(saver))
//! }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let path = std::env::temp_dir().join(format!("stategraph-doc-{}.db", std::process::id()));
//! # let _ = std::fs::remove_file(&path);
//! let thread = RunConfig::new().thread("notes");
//!
//! let first = graph(SqliteSaver::open(&path)?)?;
//! first.invoke_blocking(Notes::update(), &thread)?;
//!
//! // Another saver on the same file (as a restarted process would open) sees the
//! // thread: new input is applied to its saved state.
//! let second = graph(SqliteSaver::open(&path)?)?;
//! let out = second.invoke_blocking(Notes::update(), &thread)?;
//! assert_eq!(out.values.lines, ["hello", "hello"]);
//! # drop((first, second));
//! # for suffix in ["", "-wal", "-shm"] {
//! #     let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
//! # }
//! # Ok(())
//! # }
//! ```
//!
//! # Storage
//!
//! The saver keeps its own tables, prefixed `stategraph_`, so the file can hold an
//! application's tables too. A channel value is stored once, at its version;
//! checkpoints refer to it. Records are JSON text. `stategraph_meta` records the tables'
//! version ([`TABLE_VERSION`]): opening a database upgrades older tables in one
//! transaction and refuses newer ones without touching the file.
//!
//! Every failure is a [`CheckpointError`](stategraph::checkpoint::CheckpointError):
//! a record that does not decode is `Corrupt` and names its thread and checkpoint, a
//! record over the [size limit](SqliteOptions::max_record_bytes) is `Oversize`, and
//! SQLite's own errors (and [`SqliteError`]) are the source of `Storage`.
//!
//! # Long-term memory: the store
//!
//! [`SqliteStore`] is a [`Store`](stategraph::store::Store) (namespaced JSON items with
//! filters, time-to-lives and semantic search, shared by every thread) in a SQLite
//! file — the saver's file or one of its own. It keeps its own tables, versioned
//! apart from the saver's ([`STORE_TABLE_VERSION`]), and opens the file as the saver
//! does. See `docs/store.md` in the repository for its storage, its concurrency and
//! why semantic search is an exact scan.
//!
//! ```
//! use serde_json::json;
//! use stategraph::store::{SearchQuery, Store};
//! use stategraph_sqlite::SqliteStore;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let path = std::env::temp_dir().join(format!("stategraph-store-doc-{}.db", std::process::id()));
//! # let _ = std::fs::remove_file(&path);
//! let store = SqliteStore::open(&path)?;
//! let runtime = tokio::runtime::Builder::new_current_thread().build()?;
//! runtime.block_on(async {
//!     store.put(&["users", "u-42"], "prefs", json!({"theme": "dark"})).await?;
//!     let hits = store.search(&["users"], SearchQuery::new()).await?;
//!     assert_eq!(hits[0].item.value["theme"], "dark");
//!     Ok::<_, stategraph::store::StoreError>(())
//! })?;
//! # drop(store);
//! # for suffix in ["", "-wal", "-shm"] {
//! #     let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
//! # }
//! # Ok(())
//! # }
//! ```
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]
#![cfg_attr(not(test), deny(clippy::too_many_lines))]

mod cache;
mod error;
mod group;
mod kv;
mod lock;
mod open;
mod options;
mod saver;
mod schema;
mod store;
mod threads;

pub use error::SqliteError;
pub use kv::{STORE_TABLE_VERSION, SqliteStore};
pub use options::{SqliteOptions, Synchronous};
pub use saver::SqliteSaver;
pub use schema::TABLE_VERSION;
