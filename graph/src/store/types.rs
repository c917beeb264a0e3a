//! The values a store takes and returns: [`Item`], [`SearchItem`], the options of a
//! put, a search and a namespace listing, and the operations of a batch.

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::filter::Filter;

/// A namespace path: one or more labels, e.g. `["users", "u-42", "prefs"]`.
pub type Namespace = Vec<String>;

/// A stored value and its metadata.
///
/// Serializes with `created_at`, `updated_at` and `expires_at` as RFC 3339 strings
/// (UTC, nanoseconds).
#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    /// Where the item lives.
    pub namespace: Namespace,
    /// Its key within the namespace.
    pub key: String,
    /// The value: always a JSON object.
    pub value: serde_json::Value,
    /// When the key was first put (kept by later puts).
    pub created_at: SystemTime,
    /// When the value was last put.
    pub updated_at: SystemTime,
    /// When the item expires, if it has a time-to-live.
    pub expires_at: Option<SystemTime>,
}

#[derive(Serialize, Deserialize)]
struct ItemRepr {
    namespace: Namespace,
    key: String,
    value: serde_json::Value,
    created_at: String,
    updated_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires_at: Option<String>,
}

fn rfc3339(time: SystemTime) -> String {
    humantime::format_rfc3339_nanos(time).to_string()
}

fn parse_time<E: serde::de::Error>(field: &str, text: &str) -> Result<SystemTime, E> {
    humantime::parse_rfc3339(text)
        .map_err(|e| E::custom(format!("`{field}` is not an RFC 3339 time: {e}")))
}

impl Serialize for Item {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        ItemRepr {
            namespace: self.namespace.clone(),
            key: self.key.clone(),
            value: self.value.clone(),
            created_at: rfc3339(self.created_at),
            updated_at: rfc3339(self.updated_at),
            expires_at: self.expires_at.map(rfc3339),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Item {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let repr = ItemRepr::deserialize(deserializer)?;
        Ok(Self {
            created_at: parse_time("created_at", &repr.created_at)?,
            updated_at: parse_time("updated_at", &repr.updated_at)?,
            expires_at: repr
                .expires_at
                .as_deref()
                .map(|t| parse_time("expires_at", t))
                .transpose()?,
            namespace: repr.namespace,
            key: repr.key,
            value: repr.value,
        })
    }
}

/// A search hit: the item and, for a semantic search, its cosine similarity to the
/// query (`None` without a query, or for an item that has no embedded fields).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchItem {
    /// The item.
    #[serde(flatten)]
    pub item: Item,
    /// Its similarity to the query.
    pub score: Option<f64>,
}

/// Which fields of a put are embedded (LangGraph's `index=`).
#[derive(Clone, Debug, Default, PartialEq)]
pub enum IndexFields {
    /// The fields of the store's [`IndexConfig`](super::IndexConfig).
    #[default]
    Configured,
    /// None: the item is stored but not found by a semantic search's ranking.
    Skip,
    /// These JSON paths instead of the configured ones.
    Paths(Vec<String>),
}

/// Options of a put.
#[derive(Clone, Debug, Default)]
pub struct PutOptions {
    /// The item's time-to-live; `None` takes the store's
    /// [`TtlConfig::default_ttl`](super::TtlConfig::default_ttl).
    pub ttl: Option<Duration>,
    /// Which fields to embed.
    pub index: IndexFields,
}

impl PutOptions {
    /// The store's defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Expires the item `ttl` after the put (and after each refreshing read).
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// Embeds these fields.
    #[must_use]
    pub fn index(mut self, index: IndexFields) -> Self {
        self.index = index;
        self
    }
}

/// What a search looks for, beyond its namespace prefix.
#[derive(Clone, Debug)]
pub struct SearchQuery {
    /// Only items whose value matches.
    pub filter: Option<Filter>,
    /// Rank by similarity to this text; needs an index.
    pub query: Option<String>,
    /// At most this many hits (default 10).
    pub limit: usize,
    /// Skip this many hits first (default 0).
    pub offset: usize,
    /// Whether hits refresh their time-to-live; `None` takes the store's
    /// [`TtlConfig::refresh_on_read`](super::TtlConfig::refresh_on_read).
    pub refresh_ttl: Option<bool>,
}

impl Default for SearchQuery {
    fn default() -> Self {
        Self {
            filter: None,
            query: None,
            limit: 10,
            offset: 0,
            refresh_ttl: None,
        }
    }
}

impl SearchQuery {
    /// Every item, newest first, ten at a time.
    pub fn new() -> Self {
        Self::default()
    }

    /// Only items matching `filter`.
    #[must_use]
    pub fn filter(mut self, filter: Filter) -> Self {
        self.filter = Some(filter);
        self
    }

    /// Ranks by similarity to `text`.
    #[must_use]
    pub fn query(mut self, text: impl Into<String>) -> Self {
        self.query = Some(text.into());
        self
    }

    /// At most `limit` hits.
    #[must_use]
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// Skips the first `offset` hits.
    #[must_use]
    pub fn offset(mut self, offset: usize) -> Self {
        self.offset = offset;
        self
    }

    /// Whether hits refresh their time-to-live.
    #[must_use]
    pub fn refresh_ttl(mut self, refresh: bool) -> Self {
        self.refresh_ttl = Some(refresh);
        self
    }
}

/// Which namespaces a listing returns.
#[derive(Clone, Debug)]
pub struct NamespaceQuery {
    /// Only namespaces starting with these labels; `"*"` matches any one label.
    pub prefix: Option<Namespace>,
    /// Only namespaces ending with these labels; `"*"` matches any one label.
    pub suffix: Option<Namespace>,
    /// Cut longer namespaces to this many labels (duplicates are listed once).
    pub max_depth: Option<usize>,
    /// At most this many (default 100).
    pub limit: usize,
    /// Skip this many first (default 0).
    pub offset: usize,
}

impl Default for NamespaceQuery {
    fn default() -> Self {
        Self {
            prefix: None,
            suffix: None,
            max_depth: None,
            limit: 100,
            offset: 0,
        }
    }
}

impl NamespaceQuery {
    /// Every namespace, a hundred at a time.
    pub fn new() -> Self {
        Self::default()
    }

    /// Only namespaces starting with `labels` (`"*"` matches any one label).
    #[must_use]
    pub fn prefix(mut self, labels: &[&str]) -> Self {
        self.prefix = Some(labels.iter().map(|l| (*l).to_owned()).collect());
        self
    }

    /// Only namespaces ending with `labels` (`"*"` matches any one label).
    #[must_use]
    pub fn suffix(mut self, labels: &[&str]) -> Self {
        self.suffix = Some(labels.iter().map(|l| (*l).to_owned()).collect());
        self
    }

    /// Cuts longer namespaces to `depth` labels.
    #[must_use]
    pub fn max_depth(mut self, depth: usize) -> Self {
        self.max_depth = Some(depth);
        self
    }

    /// At most `limit` namespaces.
    #[must_use]
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// Skips the first `offset` namespaces.
    #[must_use]
    pub fn offset(mut self, offset: usize) -> Self {
        self.offset = offset;
        self
    }
}

/// One operation of a [`Store::batch`](super::Store::batch).
#[derive(Clone, Debug)]
pub enum StoreOp {
    /// Reads one item.
    Get {
        /// Its namespace.
        namespace: Namespace,
        /// Its key.
        key: String,
        /// Whether the read refreshes its time-to-live (`None`: the store's default).
        refresh_ttl: Option<bool>,
    },
    /// Writes one item, or deletes it when `value` is `None`.
    Put {
        /// Its namespace.
        namespace: Namespace,
        /// Its key.
        key: String,
        /// The new value (a JSON object), or `None` to delete.
        value: Option<serde_json::Value>,
        /// Time-to-live and indexing.
        options: PutOptions,
    },
    /// Searches the items under a namespace prefix (`[]`: every namespace).
    Search {
        /// The labels the items' namespaces start with.
        namespace_prefix: Namespace,
        /// Filter, query, paging.
        query: SearchQuery,
    },
    /// Lists namespaces.
    ListNamespaces(NamespaceQuery),
}

/// What one [`StoreOp`] returned, in the same position of the batch's result.
#[derive(Clone, Debug, PartialEq)]
pub enum StoreOutput {
    /// Of a `Get`.
    Item(Option<Item>),
    /// Of a `Put`.
    Done,
    /// Of a `Search`.
    Items(Vec<SearchItem>),
    /// Of a `ListNamespaces`.
    Namespaces(Vec<Namespace>),
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use serde_json::json;

    use super::*;

    #[test]
    fn items_round_trip_with_rfc3339_times() {
        let at = UNIX_EPOCH + Duration::new(1_795_000_000, 123_456_789);
        let item = Item {
            namespace: vec!["users".into(), "u1".into()],
            key: "prefs".into(),
            value: json!({"tone": "brief"}),
            created_at: at,
            updated_at: at + Duration::from_secs(1),
            expires_at: Some(at + Duration::from_secs(60)),
        };
        let hit = SearchItem {
            item: item.clone(),
            score: Some(0.5),
        };
        let json = serde_json::to_value(&hit).unwrap();
        assert_eq!(json["created_at"], "2026-11-18T11:06:40.123456789Z");
        assert_eq!(json["score"], 0.5);
        assert_eq!(serde_json::from_value::<SearchItem>(json).unwrap(), hit);
        let mut bad = serde_json::to_value(&item).unwrap();
        bad["updated_at"] = json!("yesterday");
        let err = serde_json::from_value::<Item>(bad).unwrap_err().to_string();
        assert!(
            err.contains("`updated_at` is not an RFC 3339 time"),
            "{err}"
        );
    }
}
