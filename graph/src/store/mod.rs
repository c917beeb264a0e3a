//! Long-term memory shared across threads: the [`Store`].
//!
//! Checkpoints remember one thread. A store remembers across threads: a user's
//! preferences, facts learned last week, a team's documents. Items are JSON objects
//! addressed by a *namespace* (a path of labels, like `["users", "u-42"]`) and a key,
//! and carry `created_at` / `updated_at`. This is LangGraph's `BaseStore`.
//!
//! # Put, get, search
//!
//! ```
//! use serde::{Deserialize, Serialize};
//! use serde_json::json;
//! use stategraph::store::{Filter, InMemoryStore, NamespaceQuery, SearchQuery, Store, StoreExt};
//!
//! #[derive(Serialize, Deserialize, Debug, PartialEq)]
//! struct Profile {
//!     name: String,
//!     tone: String,
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), stategraph::store::StoreError> {
//! let store = InMemoryStore::new();
//!
//! // Plain JSON objects...
//! store.put(&["notes", "u1"], "n1", json!({"text": "likes tea", "stars": 4})).await?;
//! store.put(&["notes", "u1"], "n2", json!({"text": "hates rain", "stars": 2})).await?;
//!
//! // ...or typed values, read back as the type that wrote them.
//! let profile = Profile { name: "Ada".into(), tone: "brief".into() };
//! store.put_typed(&["users", "u1"], "profile", &profile).await?;
//! let back: Option<Profile> = store.get_typed(&["users", "u1"], "profile").await?;
//! assert_eq!(back, Some(profile));
//!
//! // Search a namespace prefix with a filter (see `Filter` for the language).
//! let good = store
//!     .search(&["notes"], SearchQuery::new().filter(Filter::parse(&json!({"stars": {"$gte": 3}}))?))
//!     .await?;
//! assert_eq!(good.len(), 1);
//! assert_eq!(good[0].item.key, "n1");
//!
//! // List namespaces, cut to one label.
//! let top = store.list_namespaces(NamespaceQuery::new().max_depth(1)).await?;
//! assert_eq!(top, [vec!["notes".to_string()], vec!["users".to_string()]]);
//!
//! // Bad input is an error, and nothing is stored.
//! assert!(store.put(&["a.b"], "k", json!({})).await.is_err());
//! assert!(store.put(&["notes"], "k", json!("not an object")).await.is_err());
//! # Ok(())
//! # }
//! ```
//!
//! # Semantic search
//!
//! Build the store with an [`IndexConfig`]: an [`Embed`] implementation (a model, a
//! service; here a toy one), the vectors' dimensions, and which fields to embed.
//! A search with a `query` then ranks by [`cosine`] similarity.
//!
//! ```
//! use serde_json::json;
//! use stategraph::BoxFuture;
//! use stategraph::store::{Embed, IndexConfig, InMemoryStore, SearchQuery, Store, StoreError};
//!
//! /// Counts two words: a toy embedder with two dimensions.
//! struct TeaOrRain;
//!
//! impl Embed for TeaOrRain {
//!     fn embed<'a>(&'a self, texts: &'a [String]) -> BoxFuture<'a, Result<Vec<Vec<f32>>, StoreError>> {
//!         Box::pin(async move {
//!             Ok(texts
//!                 .iter()
//!                 .map(|t| vec![t.matches("tea").count() as f32, t.matches("rain").count() as f32])
//!                 .collect())
//!         })
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), StoreError> {
//! let store = InMemoryStore::new().with_index(IndexConfig::new(2, TeaOrRain).fields(["text"]));
//! store.put(&["notes"], "n1", json!({"text": "green tea"})).await?;
//! store.put(&["notes"], "n2", json!({"text": "rain, more rain"})).await?;
//!
//! let hits = store.search(&["notes"], SearchQuery::new().query("tea please").limit(1)).await?;
//! assert_eq!(hits[0].item.key, "n1");
//! assert!(hits[0].score.is_some_and(|s| s > 0.99));
//! # Ok(())
//! # }
//! ```
//!
//! # Time-to-live
//!
//! With a [`TtlConfig`] (or [`PutOptions::ttl`]), items expire: a get or search hit
//! moves the expiry forward (refresh on read, unless turned off), an expired item is
//! never returned, and [`Store::sweep`] (or a background sweeper with
//! [`TtlConfig::sweep_interval`]) removes them.
//!
//! # In nodes: not checkpointed
//!
//! A graph compiled with [`CompileOptions::store`](crate::CompileOptions::store)
//! gives every node the store through
//! [`NodeContext::store`](crate::NodeContext::store). Store calls are not
//! part of the checkpoint and are not replayed: a node that runs again (a retry, a
//! resume after an interrupt, a re-run from a checkpoint) makes its store calls
//! again. Write by key, so that writing twice is the same as writing once.
//!
//! # Backends
//!
//! [`InMemoryStore`] here; SQLite and PostgreSQL stores in their crates. Every
//! backend runs [`validate_ops`] before writing and shares the ranking
//! ([`order_hits`]), expiry ([`is_expired`]) and listing ([`list_matching`]) rules.

pub mod backend;
mod error;
mod filter;
mod index;
mod memory;
mod namespaces;
mod traits;
mod ttl;
mod typed;
mod types;
mod validate;

pub use error::StoreError;
pub use filter::{Condition, Filter, FilterOp, compare, field_at, json_eq};
pub use index::{Embed, IndexConfig, best_score, cosine, embed_ops, order_hits, texts_to_embed};
pub use memory::InMemoryStore;
pub use namespaces::{WILDCARD, has_prefix, list_matching, namespace_matches};
pub use traits::Store;
pub use ttl::{TtlConfig, expiry, is_expired};
pub use typed::StoreExt;
pub use types::{
    IndexFields, Item, Namespace, NamespaceQuery, PutOptions, SearchItem, SearchQuery, StoreOp,
    StoreOutput,
};
pub use validate::{
    MAX_VALUE_BYTES, RESERVED_LABEL, validate_key, validate_namespace, validate_ops, validate_value,
};
