//! Helpers for SQL (or any other) store backends, so every backend follows the
//! same rules as [`InMemoryStore`](super::InMemoryStore).
//!
//! What a batch does before it touches the database: every operation validated, the
//! texts of puts and the queries of searches embedded (one call to the embedder for
//! the whole batch, by the core's `embed_ops`), time-to-lives and refreshes resolved. Then the search hits'
//! filter, scores and order, with the rules the core crate shares between backends.

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use super::{
    IndexConfig, Item, Namespace, NamespaceQuery, SearchItem, SearchQuery, StoreError, StoreOp,
    TtlConfig,
};
use serde_json::Value;

/// An operation ready to run: validated, embedded, with the store's defaults applied.
#[derive(Debug)]
pub enum Planned {
    /// Read one item.
    Get {
        /// Its namespace.
        namespace: Namespace,
        /// Its key.
        key: String,
        /// Whether reading it moves its expiry.
        refresh: bool,
    },
    /// Write (or delete) one item.
    Put {
        /// Its namespace.
        namespace: Namespace,
        /// Its key.
        key: String,
        /// `None` deletes.
        value: Option<Value>,
        /// Its time-to-live (the store's default applied).
        ttl: Option<Duration>,
        /// The vectors of the new value's embedded texts; they replace the item's
        /// old ones.
        vectors: Vec<Vec<f32>>,
    },
    /// Search under a namespace prefix.
    Search {
        /// The prefix.
        prefix: Namespace,
        /// The query as given.
        search: SearchQuery,
        /// The query's vector, for a semantic search.
        query: Option<Vec<f32>>,
        /// Whether the hits' expiries move.
        refresh: bool,
    },
    /// List namespaces.
    List(NamespaceQuery),
}

/// An item as read, with what a refresh and a ranking need.
#[derive(Debug)]
pub struct Stored {
    /// The item.
    pub item: Item,
    /// Its time-to-live, when it has one.
    pub ttl: Option<Duration>,
    /// Its embedded texts' vectors.
    pub vectors: Vec<Vec<f32>>,
}

/// A refreshed item's address and new expiry (`None`: too far to represent).
pub type Refresh = (Namespace, String, Option<SystemTime>);

/// Validates and embeds `ops`; nothing is written when this fails.
///
/// # Errors
/// The first invalid operation's error, [`StoreError::NoIndex`], or the embedder's
/// failure ([`StoreError::Dimension`] for a vector of the wrong length).
pub async fn plan(
    ops: Vec<StoreOp>,
    index: Option<&IndexConfig>,
    ttl: &TtlConfig,
) -> Result<Vec<Planned>, StoreError> {
    super::validate_ops(&ops, index.is_some())?;
    let vectors = super::embed_ops(index, &ops).await?;
    let planned = ops
        .into_iter()
        .zip(vectors)
        .map(|(op, vectors)| match op {
            StoreOp::Get {
                namespace,
                key,
                refresh_ttl,
            } => Planned::Get {
                namespace,
                key,
                refresh: ttl.refreshes(refresh_ttl),
            },
            StoreOp::Put {
                namespace,
                key,
                value,
                options,
            } => Planned::Put {
                namespace,
                key,
                value,
                ttl: ttl.ttl_for(options.ttl),
                vectors,
            },
            StoreOp::Search {
                namespace_prefix,
                query,
            } => Planned::Search {
                prefix: namespace_prefix,
                refresh: ttl.refreshes(query.refresh_ttl),
                query: vectors.into_iter().next(),
                search: query,
            },
            StoreOp::ListNamespaces(query) => Planned::List(query),
        })
        .collect();
    Ok(planned)
}

/// The hits of a search among `candidates` (the live items under its prefix): those
/// its filter matches, scored against `query`, in the shared order, paged. Each with
/// its time-to-live, for a refresh.
pub fn rank(
    candidates: Vec<Stored>,
    search: &SearchQuery,
    query: Option<&[f32]>,
) -> Vec<(Stored, Option<f64>)> {
    let mut ttls: HashMap<(Namespace, String), Duration> = HashMap::new();
    let mut hits = Vec::new();
    for stored in candidates {
        if search
            .filter
            .as_ref()
            .is_some_and(|f| !f.matches(&stored.item.value))
        {
            continue;
        }
        let score = query.and_then(|q| super::best_score(q, &stored.vectors));
        if let Some(ttl) = stored.ttl {
            ttls.insert(
                (stored.item.namespace.clone(), stored.item.key.clone()),
                ttl,
            );
        }
        hits.push(SearchItem {
            item: stored.item,
            score,
        });
    }
    super::order_hits(hits, query.is_some(), search.offset, search.limit)
        .into_iter()
        .map(|hit| {
            let address = (hit.item.namespace.clone(), hit.item.key.clone());
            let stored = Stored {
                ttl: ttls.remove(&address),
                item: hit.item,
                vectors: Vec::new(),
            };
            (stored, hit.score)
        })
        .collect()
}

/// The item of `stored` with its expiry moved to `now` + its time-to-live (when it
/// has one), noting the refresh for the database.
pub fn refreshed(stored: Stored, now: SystemTime, refresh: &mut Vec<Refresh>) -> Item {
    let mut item = stored.item;
    if let Some(ttl) = stored.ttl {
        item.expires_at = super::expiry(now, Some(ttl));
        refresh.push((item.namespace.clone(), item.key.clone(), item.expires_at));
    }
    item
}

/// The namespace stored as `prefix` (labels joined by `.`).
pub fn split(prefix: &str) -> Namespace {
    prefix.split('.').map(str::to_owned).collect()
}

/// The listing of `query` over the namespaces of live items.
pub fn list_namespaces(
    namespaces: impl Iterator<Item = Namespace>,
    query: &NamespaceQuery,
) -> Vec<Namespace> {
    super::list_matching(namespaces, query)
}

/// A vector as little-endian `f32`s.
pub fn to_blob(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The vector of a blob written by [`to_blob`] (a trailing partial value is ignored).
pub fn from_blob(blob: &[u8]) -> Vec<f32> {
    blob.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_round_trip_through_blobs() {
        let v = vec![0.5, -1.25, f32::MAX, 0.0];
        assert_eq!(to_blob(&v).len(), 16);
        assert_eq!(from_blob(&to_blob(&v)), v);
    }

    #[test]
    fn namespaces_split_on_dots() {
        assert_eq!(split("users.u-1"), ["users", "u-1"]);
        assert_eq!(split("a"), ["a"]);
    }
}

/// The best score of each item (an item with several embedded texts scores its best
/// field), from the rows of a semantic search.
#[derive(Debug, Default)]
pub struct BestScores(HashMap<(String, String), f64>);

impl BestScores {
    /// Records one vector's score for the item at `prefix` (labels joined by `.`)
    /// and `key`.
    pub fn add(&mut self, prefix: String, key: String, score: f64) {
        self.0
            .entry((prefix, key))
            .and_modify(|best| {
                if score.total_cmp(best) == std::cmp::Ordering::Greater {
                    *best = score;
                }
            })
            .or_insert(score);
    }

    /// The items by score, highest first; ties by namespace, then key.
    pub fn ranked(self) -> Vec<(f64, Namespace, String)> {
        let mut scored: Vec<(f64, Namespace, String)> = self
            .0
            .into_iter()
            .map(|((prefix, key), score)| (score, split(&prefix), key))
            .collect();
        scored.sort_by(|a, b| {
            b.0.total_cmp(&a.0)
                .then_with(|| (&a.1, &a.2).cmp(&(&b.1, &b.2)))
        });
        scored
    }
}
