//! [`InMemoryStore`]: a [`Store`] in process memory, with semantic search, time-to-live
//! and a background sweeper. For tests, examples and single-process programs.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, SystemTime};

use super::error::StoreError;
use super::index::{IndexConfig, best_score, embed_ops, order_hits};
use super::namespaces::{has_prefix, list_matching};
use super::traits::Store;
use super::ttl::{TtlConfig, expiry, is_expired};
use super::types::{Item, Namespace, SearchItem, StoreOp, StoreOutput};
use super::validate::validate_ops;
use crate::future::BoxFuture;

/// A [`Store`] in process memory. Cloning shares the items; the sweeper (with
/// [`TtlConfig::sweep_interval`]) stops when the last clone is dropped.
///
/// ```
/// use serde_json::json;
/// use stategraph::store::{InMemoryStore, Store};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), stategraph::store::StoreError> {
/// let store = InMemoryStore::new();
/// store.put(&["users", "u1"], "prefs", json!({"tone": "brief"})).await?;
/// let item = store.get(&["users", "u1"], "prefs").await?;
/// assert_eq!(item.map(|i| i.value["tone"].clone()), Some(json!("brief")));
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Default)]
pub struct InMemoryStore {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for InMemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InMemoryStore")
            .field("items", &self.len())
            .field("index", &self.inner.index)
            .field("ttl", &self.inner.ttl)
            .finish()
    }
}

#[derive(Default)]
struct Inner {
    items: Mutex<BTreeMap<(Namespace, String), Entry>>,
    index: Option<IndexConfig>,
    ttl: TtlConfig,
    sweeper: Mutex<Option<tokio::task::AbortHandle>>,
}

#[derive(Clone, Debug)]
struct Entry {
    item: Item,
    ttl: Option<Duration>,
    vectors: Vec<Vec<f32>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(handle) = self.sweeper.get_mut().ok().and_then(Option::take) {
            handle.abort();
        }
    }
}

impl InMemoryStore {
    /// An empty store without an index or time-to-live.
    pub fn new() -> Self {
        Self::default()
    }

    /// Embeds puts with `index`, so searches with a `query` rank by similarity.
    /// Items already held keep their vectors; call it on a new store. On a store that
    /// is shared (cloned), the result is a separate store holding a copy of the items.
    #[must_use]
    pub fn with_index(self, index: IndexConfig) -> Self {
        self.rebuild(|inner| inner.index = Some(index))
    }

    /// Expires items as `ttl` says; with a `sweep_interval`, a tokio task sweeps
    /// (started by the first call made inside a tokio runtime).
    #[must_use]
    pub fn with_ttl(self, ttl: TtlConfig) -> Self {
        self.rebuild(|inner| inner.ttl = ttl)
    }

    fn rebuild(self, change: impl FnOnce(&mut Inner)) -> Self {
        let mut inner = match Arc::try_unwrap(self.inner) {
            Ok(inner) => inner,
            Err(shared) => Inner {
                items: Mutex::new(lock(&shared.items).clone()),
                index: shared.index.clone(),
                ttl: shared.ttl.clone(),
                sweeper: Mutex::new(None),
            },
        };
        change(&mut inner);
        Self {
            inner: Arc::new(inner),
        }
    }

    /// How many items are held, expired ones included until swept.
    pub fn len(&self) -> usize {
        lock(&self.inner.items).len()
    }

    /// Whether no items are held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn ensure_sweeper(&self) {
        let Some(every) = self.inner.ttl.sweep_interval else {
            return;
        };
        let mut sweeper = lock(&self.inner.sweeper);
        if sweeper.is_some() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let weak: Weak<Inner> = Arc::downgrade(&self.inner);
        let task = runtime.spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                let Some(inner) = weak.upgrade() else {
                    return;
                };
                sweep_items(&inner, SystemTime::now());
            }
        });
        *sweeper = Some(task.abort_handle());
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // The maps are left consistent at every await-free step, so a panic elsewhere
    // does not make them unusable.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn sweep_items(inner: &Inner, now: SystemTime) -> usize {
    let mut items = lock(&inner.items);
    let before = items.len();
    items.retain(|_, e| !is_expired(e.item.expires_at, now));
    before - items.len()
}

impl Store for InMemoryStore {
    fn batch<'a>(
        &'a self,
        ops: Vec<StoreOp>,
    ) -> BoxFuture<'a, Result<Vec<StoreOutput>, StoreError>> {
        Box::pin(async move {
            self.ensure_sweeper();
            let inner = &*self.inner;
            validate_ops(&ops, inner.index.is_some())?;
            let vectors = embed_ops(inner.index.as_ref(), &ops).await?;
            let now = SystemTime::now();
            let mut items = lock(&inner.items);
            let outputs = ops
                .into_iter()
                .zip(vectors)
                .map(|(op, vectors)| apply(inner, &mut items, op, vectors, now))
                .collect();
            Ok(outputs)
        })
    }

    fn sweep(&self) -> BoxFuture<'_, Result<usize, StoreError>> {
        Box::pin(async move {
            self.ensure_sweeper();
            Ok(sweep_items(&self.inner, SystemTime::now()))
        })
    }
}

type Items = BTreeMap<(Namespace, String), Entry>;

fn apply(
    inner: &Inner,
    items: &mut Items,
    op: StoreOp,
    vectors: Vec<Vec<f32>>,
    now: SystemTime,
) -> StoreOutput {
    match op {
        StoreOp::Get {
            namespace,
            key,
            refresh_ttl,
        } => {
            let refresh = inner.ttl.refreshes(refresh_ttl);
            let item = match items.get_mut(&(namespace, key)) {
                Some(entry) if !is_expired(entry.item.expires_at, now) => {
                    Some(read(entry, refresh, now))
                }
                _ => None,
            };
            StoreOutput::Item(item)
        }
        StoreOp::Put {
            namespace,
            key,
            value: None,
            ..
        } => {
            items.remove(&(namespace, key));
            StoreOutput::Done
        }
        StoreOp::Put {
            namespace,
            key,
            value: Some(value),
            options,
        } => {
            let address = (namespace, key);
            let created_at = match items.get(&address) {
                Some(old) if !is_expired(old.item.expires_at, now) => old.item.created_at,
                _ => now,
            };
            let ttl = inner.ttl.ttl_for(options.ttl);
            let item = Item {
                namespace: address.0.clone(),
                key: address.1.clone(),
                value,
                created_at,
                updated_at: now,
                expires_at: expiry(now, ttl),
            };
            items.insert(address, Entry { item, ttl, vectors });
            StoreOutput::Done
        }
        StoreOp::Search {
            namespace_prefix,
            query,
        } => {
            let refresh = inner.ttl.refreshes(query.refresh_ttl);
            let query_vector = vectors.first();
            let hits = items
                .values()
                .filter(|e| !is_expired(e.item.expires_at, now))
                .filter(|e| has_prefix(&e.item.namespace, &namespace_prefix))
                .filter(|e| {
                    query
                        .filter
                        .as_ref()
                        .is_none_or(|f| f.matches(&e.item.value))
                })
                .map(|e| SearchItem {
                    item: e.item.clone(),
                    score: query_vector.and_then(|q| best_score(q, &e.vectors)),
                })
                .collect();
            let mut hits = order_hits(hits, query_vector.is_some(), query.offset, query.limit);
            if refresh {
                for hit in &mut hits {
                    let address = (hit.item.namespace.clone(), hit.item.key.clone());
                    if let Some(entry) = items.get_mut(&address) {
                        hit.item = read(entry, true, now);
                    }
                }
            }
            StoreOutput::Items(hits)
        }
        StoreOp::ListNamespaces(query) => {
            let live = items
                .values()
                .filter(|e| !is_expired(e.item.expires_at, now))
                .map(|e| &e.item.namespace);
            StoreOutput::Namespaces(list_matching(live, &query))
        }
    }
}

/// The entry's item as a read returns it, after refreshing its expiry if asked.
fn read(entry: &mut Entry, refresh: bool, now: SystemTime) -> Item {
    if refresh && entry.ttl.is_some() {
        entry.item.expires_at = expiry(now, entry.ttl);
    }
    entry.item.clone()
}
