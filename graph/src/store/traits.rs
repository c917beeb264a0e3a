//! The [`Store`] trait: one required method, `batch`, and the everyday calls built on
//! it.

use super::error::StoreError;
use super::types::{
    Item, Namespace, NamespaceQuery, PutOptions, SearchItem, SearchQuery, StoreOp, StoreOutput,
};
use crate::future::BoxFuture;

/// Long-term memory shared across threads: JSON objects addressed by a namespace
/// path and a key. See the [module docs](super) for a tutorial.
///
/// Object safe: a graph holds an `Arc<dyn Store>`.
pub trait Store: Send + Sync + 'static {
    /// Runs `ops` in order and returns one output per op, in the same order. The puts
    /// and deletes of one batch are atomic: all are stored or none. Every op is
    /// validated (see [`validate_ops`](super::validate_ops)) and every value embedded
    /// before anything is written. The writes of one batch share one timestamp (their
    /// `updated_at`), and later ops see the writes of earlier ones.
    ///
    /// # Errors
    /// The first invalid op's error, an embedder's error, or the backend's; nothing
    /// of the batch is written then.
    fn batch<'a>(
        &'a self,
        ops: Vec<StoreOp>,
    ) -> BoxFuture<'a, Result<Vec<StoreOutput>, StoreError>>;

    /// Removes expired items; returns how many.
    ///
    /// # Errors
    /// The backend's.
    fn sweep(&self) -> BoxFuture<'_, Result<usize, StoreError>>;

    /// The item at `namespace`/`key`, if present and not expired (refreshing its
    /// time-to-live when the store refreshes on read).
    ///
    /// # Errors
    /// An invalid namespace or key, or the backend's error.
    fn get<'a>(
        &'a self,
        namespace: &'a [&'a str],
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<Item>, StoreError>> {
        let op = StoreOp::Get {
            namespace: owned(namespace),
            key: key.to_owned(),
            refresh_ttl: None,
        };
        Box::pin(async move {
            match one(self.batch(vec![op]).await?) {
                Some(StoreOutput::Item(item)) => Ok(item),
                _ => Err(StoreError::BatchOutput { op: "get" }),
            }
        })
    }

    /// Stores `value` (a JSON object) at `namespace`/`key`, replacing what was there
    /// (its `created_at` is kept).
    ///
    /// # Errors
    /// An invalid namespace or key, a value that is not an object or is too large, an
    /// embedder's error, or the backend's; nothing is stored then.
    fn put<'a>(
        &'a self,
        namespace: &'a [&'a str],
        key: &'a str,
        value: serde_json::Value,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.put_with(namespace, key, value, PutOptions::default())
    }

    /// As [`put`](Self::put), with a time-to-live or other index fields.
    ///
    /// # Errors
    /// As [`put`](Self::put).
    fn put_with<'a>(
        &'a self,
        namespace: &'a [&'a str],
        key: &'a str,
        value: serde_json::Value,
        options: PutOptions,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let op = StoreOp::Put {
            namespace: owned(namespace),
            key: key.to_owned(),
            value: Some(value),
            options,
        };
        Box::pin(async move { done(self.batch(vec![op]).await?, "put") })
    }

    /// Removes the item at `namespace`/`key` (nothing happens when there is none).
    ///
    /// # Errors
    /// An invalid namespace or key, or the backend's error.
    fn delete<'a>(
        &'a self,
        namespace: &'a [&'a str],
        key: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let op = StoreOp::Put {
            namespace: owned(namespace),
            key: key.to_owned(),
            value: None,
            options: PutOptions::default(),
        };
        Box::pin(async move { done(self.batch(vec![op]).await?, "delete") })
    }

    /// The items under `namespace_prefix` (`&[]`: all) that match `query`'s filter,
    /// ranked by similarity to its text when it has one, else newest first.
    ///
    /// # Errors
    /// An invalid prefix, a query on a store without an index, an embedder's error,
    /// or the backend's.
    fn search<'a>(
        &'a self,
        namespace_prefix: &'a [&'a str],
        query: SearchQuery,
    ) -> BoxFuture<'a, Result<Vec<SearchItem>, StoreError>> {
        let op = StoreOp::Search {
            namespace_prefix: owned(namespace_prefix),
            query,
        };
        Box::pin(async move {
            match one(self.batch(vec![op]).await?) {
                Some(StoreOutput::Items(items)) => Ok(items),
                _ => Err(StoreError::BatchOutput { op: "search" }),
            }
        })
    }

    /// The namespaces holding live items that match `query`, sorted.
    ///
    /// # Errors
    /// Invalid labels in the prefix or suffix, or the backend's error.
    fn list_namespaces<'a>(
        &'a self,
        query: NamespaceQuery,
    ) -> BoxFuture<'a, Result<Vec<Namespace>, StoreError>> {
        Box::pin(async move {
            match one(self.batch(vec![StoreOp::ListNamespaces(query)]).await?) {
                Some(StoreOutput::Namespaces(namespaces)) => Ok(namespaces),
                _ => Err(StoreError::BatchOutput {
                    op: "list_namespaces",
                }),
            }
        })
    }
}

/// `["a", "b"]` as an owned [`Namespace`].
pub(crate) fn owned(namespace: &[&str]) -> Namespace {
    namespace.iter().map(|l| (*l).to_owned()).collect()
}

fn one(outputs: Vec<StoreOutput>) -> Option<StoreOutput> {
    let mut outputs = outputs.into_iter();
    match (outputs.next(), outputs.next()) {
        (Some(output), None) => Some(output),
        _ => None,
    }
}

fn done(outputs: Vec<StoreOutput>, op: &'static str) -> Result<(), StoreError> {
    match one(outputs) {
        Some(StoreOutput::Done) => Ok(()),
        _ => Err(StoreError::BatchOutput { op }),
    }
}
