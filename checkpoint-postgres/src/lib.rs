//! A durable [`CheckpointSaver`](stategraph::checkpoint::CheckpointSaver) for
//! [stategraph] in a PostgreSQL database, shared by many worker processes on many
//! machines.
//!
//! Connect a [`PostgresSaver`] and pass it to
//! [`CompileOptions::checkpointer`](stategraph::CompileOptions::checkpointer): every
//! superstep of every thread is saved to the database, and any process connected to it
//! can continue any thread where it stopped. Two runs of one thread never interleave:
//! the second waits for the first (see
//! [`RunConfig::lock_timeout`](stategraph::RunConfig::lock_timeout)).
//!
//! ```no_run
//! use stategraph::prelude::*;
//! use stategraph_postgres::PostgresSaver;
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
//! #[tokio::main(flavor = "current_thread")]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let saver =
//!         PostgresSaver::connect("postgres://stategraph:secret@db.internal:5432/stategraph")
//!             .await?;
//!     let graph = StateGraph::<Notes>::new()
//!         .add_node(note)
//!         .add_edge(START, note)
//!         .compile_with(CompileOptions::new().checkpointer(saver))?;
//!
//!     // Any worker connected to the same database can run or continue this thread.
//!     let out = graph
//!         .invoke(Notes::update(), &RunConfig::new().thread("notes"))
//!         .await?;
//!     println!("{:?}", out.values.lines);
//!     Ok(())
//! }
//! ```
//!
//! The same with the server named by an environment variable, as a test suite would
//! run it (without `STATEGRAPH_POSTGRES_URL` it skips), and from synchronous code:
//!
//! ```
//! # use stategraph::prelude::*;
//! # use stategraph_postgres::{PostgresOptions, PostgresSaver};
//! # #[derive(GraphState, Clone, Debug, Default)]
//! # struct Notes {
//! #     #[reducer(append)]
//! #     lines: Vec<String>,
//! # }
//! # #[node]
//! # fn note(_s: &Notes, _ctx: &NodeContext) -> NotesUpdate {
//! #     Notes::update().lines(["hello".to_string()])
//! # }
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let Ok(url) = std::env::var("STATEGRAPH_POSTGRES_URL") else {
//!     return Ok(());
//! };
//! // Tables in a schema of their own, so this example leaves others' tables alone.
//! let options = PostgresOptions::new().schema("stategraph_doc");
//! let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! let saver = runtime.block_on(PostgresSaver::connect_with(&url, options))?;
//! drop(runtime);
//!
//! let graph = StateGraph::<Notes>::new()
//!     .add_node(note)
//!     .add_edge(START, note)
//!     .compile_with(CompileOptions::new().checkpointer(saver))?;
//! let thread = RunConfig::new().thread(stategraph::checkpoint::new_checkpoint_id());
//! graph.invoke_blocking(Notes::update(), &thread)?;
//! let out = graph.invoke_blocking(Notes::update(), &thread)?;
//! assert_eq!(out.values.lines, ["hello", "hello"]);
//! # Ok(())
//! # }
//! ```
//!
//! # Storage
//!
//! The saver keeps its own tables, prefixed `stategraph_`, in the user's default schema
//! or the one named by [`PostgresOptions::schema`], so the database can hold an
//! application's tables too. A channel value is stored once, at its version;
//! checkpoints refer to it, and append channels store only the appended items. Records
//! are JSON text. `stategraph_meta` records the tables' version ([`TABLE_VERSION`]):
//! connecting upgrades older tables in one transaction and refuses newer ones without
//! touching the database.
//!
//! Every failure is a [`CheckpointError`](stategraph::checkpoint::CheckpointError):
//! a record that does not decode is `Corrupt` and names its thread and checkpoint, a
//! record over the [size limit](PostgresOptions::max_record_bytes) is `Oversize`, and
//! connection and query failures are `Storage` with a [`PostgresError`] source.
//!
//! # TLS
//!
//! `sslmode` in the URL (`postgres://…/db?sslmode=verify-full`, or `sslmode=…` in a
//! key/value string) means what it means to libpq, over rustls:
//!
//! | `sslmode` | Encrypted | Certificate checked |
//! |---|---|---|
//! | `disable` | no | — |
//! | `prefer` (default) | if the server offers TLS, else plain | no (chain only if a CA is given) |
//! | `require` | yes, or the connection fails | no (chain only if a CA is given) |
//! | `verify-ca` | yes | chain up to a trusted CA; any host name |
//! | `verify-full` | yes | chain, and the host name in the URL |
//!
//! The trusted CA comes from `sslrootcert=/path/ca.pem` in the URL, else from
//! [`PostgresOptions::ca_file`] or [`PostgresOptions::ca_pem`], else the operating
//! system's store (`sslrootcert=system` asks for it and for `verify-full`, as libpq
//! 16 does). For a managed database (RDS, Cloud SQL, Neon, Supabase), use
//! `verify-full` with the provider's CA bundle, or the system store when the provider's
//! certificate is publicly trusted. An unknown mode, an unreadable CA file, a refused
//! certificate and a server refusing TLS each fail with their own [`PostgresError`]
//! saying how to fix it.
//!
//! # Connections
//!
//! A saver made by [`PostgresSaver::connect_with`] holds at most
//! [`pool_size`](PostgresOptions::pool_size) + 1 connections, however many threads it
//! runs at once: its pool, plus one lock session on which every run holds its
//! thread's advisory lock. A saver made by [`PostgresSaver::from_pool`] holds at most
//! the pool's `max_size` (its lock session is one of the pool's connections). If the
//! lock session dies while runs hold their threads, their next saves fail with
//! [`PostgresError::LockLost`]. Taking a thread's lock also writes the thread a new
//! fence, and each save of a held thread checks it in the save's transaction: once
//! another process has taken the thread, the old holder can no longer write it.
//!
//! # Behind PgBouncer
//!
//! In **session mode** everything works: each client connection keeps one server
//! connection. In **transaction mode**, session-level advisory locks do not hold (the
//! lock's statement and the session it lives in are not tied together), so give the
//! lock session a URL of its own with [`PostgresOptions::lock_url`], to the server
//! itself or to a session-mode pool, and let the pool go through PgBouncer. The
//! pool's queries are prepared statements, so transaction mode also needs PgBouncer
//! 1.21 or later with `max_prepared_statements` set. A
//! [`schema`](PostgresOptions::schema) is sent as the startup parameter `options`,
//! which poolers may refuse or drop: behind one, create the schema, set it on the
//! database role instead (`ALTER ROLE app SET search_path = stategraph`) and leave the
//! option unset. See `docs/postgres.md` in the repository for more.
//!
//! # Other code on the same database
//!
//! [`connect_pool`] gives a pool connected exactly as the saver connects (URL,
//! `sslmode`, CA, timeouts), for an application's own tables next to the saver's;
//! [`connect_listener`] a dedicated connection whose `NOTIFY` notifications arrive
//! through [`PostgresListener::recv`] (stategraph-server's run queue uses both).
//!
//! # Long-term memory: the store
//!
//! [`PostgresStore`] is a [`Store`](stategraph::store::Store) (namespaced JSON items
//! with filters, time-to-lives and semantic search, shared by every thread and every
//! process) in the same database, connected as the saver connects (TLS, pool,
//! timeouts, schema). It keeps its own tables, versioned apart from the saver's
//! ([`STORE_TABLE_VERSION`]). Semantic search is an exact scan of vectors stored as
//! `bytea`: the pgvector extension is not needed. See `docs/store.md` in the
//! repository.
//!
//! ```no_run
//! use serde_json::json;
//! use stategraph::store::Store;
//! use stategraph_postgres::{PostgresOptions, PostgresStore};
//!
//! # async fn demo() -> Result<(), stategraph::store::StoreError> {
//! let url = "postgres://stategraph:secret@db.internal:5432/stategraph";
//! let store = PostgresStore::connect_with(url, PostgresOptions::new().schema("memory")).await?;
//! store.put(&["users", "u-42"], "prefs", json!({"theme": "dark"})).await?;
//! # Ok(())
//! # }
//! ```
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]
#![cfg_attr(not(test), deny(clippy::too_many_lines))]

mod cache;
mod connect;
mod error;
mod kv;
mod lock;
mod options;
mod pool;
mod probe;
mod rows;
mod save;
mod saver;
mod schema;
mod session;
mod store;
mod threads;
mod tls;

pub use error::PostgresError;
pub use kv::{PostgresStore, STORE_TABLE_VERSION};
pub use options::PostgresOptions;
pub use pool::{PostgresListener, connect_listener, connect_pool};
pub use probe::{store_tables_exist, tables_exist};
pub use saver::PostgresSaver;
pub use schema::TABLE_VERSION;

/// The `deadpool-postgres` this crate is built with: build a pool for
/// [`PostgresSaver::from_pool`] with it, so the versions match.
pub use deadpool_postgres;
