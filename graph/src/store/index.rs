//! Semantic search: the [`Embed`] trait a user implements, the [`IndexConfig`] a store
//! is built with, and the pieces every backend shares (which texts of a value are
//! embedded, [`cosine`] similarity, the order of hits).

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use super::error::StoreError;
use super::types::{IndexFields, SearchItem, StoreOp};
use crate::future::BoxFuture;

/// Turns texts into vectors (an embedding model, a service, or a test's hashing
/// function). Returns one vector per text, each of the index's `dims`.
pub trait Embed: Send + Sync + 'static {
    /// Embeds `texts`, in order.
    ///
    /// # Errors
    /// Whatever the model or service fails with, as [`StoreError::Embed`].
    fn embed<'a>(&'a self, texts: &'a [String])
    -> BoxFuture<'a, Result<Vec<Vec<f32>>, StoreError>>;
}

/// How a store embeds what is put into it, so a search with a `query` can rank items
/// by similarity.
#[derive(Clone)]
pub struct IndexConfig {
    /// The length of every vector the embedder returns.
    pub dims: usize,
    /// The embedder.
    pub embed: Arc<dyn Embed>,
    /// Which parts of a value are embedded, as paths: `"$"` is the whole value,
    /// `"a.b"` (or `"$.a.b"`) a nested field, `"items[*].text"` every element's
    /// field, `"items[0]"` one element. Each text is embedded on its own; an item's
    /// score is its best text's.
    pub fields: Vec<String>,
}

impl IndexConfig {
    /// Embeds whole values (`fields = ["$"]`) with `embed`, whose vectors have `dims`
    /// dimensions.
    pub fn new(dims: usize, embed: impl Embed) -> Self {
        Self {
            dims,
            embed: Arc::new(embed),
            fields: vec!["$".to_owned()],
        }
    }

    /// Embeds these paths of each value instead of the whole value.
    #[must_use]
    pub fn fields<I: IntoIterator<Item = S>, S: Into<String>>(mut self, fields: I) -> Self {
        self.fields = fields.into_iter().map(Into::into).collect();
        self
    }

    /// The paths a put with `index` embeds; `None` when it embeds nothing.
    pub fn paths_for<'a>(&'a self, index: &'a IndexFields) -> Option<&'a [String]> {
        match index {
            IndexFields::Configured => Some(&self.fields),
            IndexFields::Skip => None,
            IndexFields::Paths(paths) => Some(paths),
        }
    }

    /// Embeds `texts` and checks the result: one vector per text, each of `dims`.
    /// Calls nothing for no texts.
    ///
    /// # Errors
    /// The embedder's error, [`StoreError::EmbedCount`] or [`StoreError::Dimension`].
    pub async fn embed_checked(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, StoreError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let vectors = self.embed.embed(texts).await?;
        if vectors.len() != texts.len() {
            return Err(StoreError::EmbedCount {
                expected: texts.len(),
                got: vectors.len(),
            });
        }
        if let Some(bad) = vectors.iter().find(|v| v.len() != self.dims) {
            return Err(StoreError::Dimension {
                expected: self.dims,
                got: bad.len(),
            });
        }
        Ok(vectors)
    }
}

impl fmt::Debug for IndexConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IndexConfig")
            .field("dims", &self.dims)
            .field("fields", &self.fields)
            .finish_non_exhaustive()
    }
}

/// Embeds what a batch needs, in one call to the embedder, before anything is
/// written: per op, the vectors of a put's texts (see [`IndexConfig::paths_for`] and
/// [`texts_to_embed`]) or of a search's query, empty for the other ops (and for
/// every op without an index).
///
/// # Errors
/// As [`IndexConfig::embed_checked`].
pub async fn embed_ops(
    index: Option<&IndexConfig>,
    ops: &[StoreOp],
) -> Result<Vec<Vec<Vec<f32>>>, StoreError> {
    let Some(index) = index else {
        return Ok(vec![Vec::new(); ops.len()]);
    };
    let mut texts = Vec::new();
    let mut counts = Vec::with_capacity(ops.len());
    for op in ops {
        let before = texts.len();
        match op {
            StoreOp::Put {
                value: Some(value),
                options,
                ..
            } => {
                if let Some(paths) = index.paths_for(&options.index) {
                    texts.extend(texts_to_embed(value, paths));
                }
            }
            StoreOp::Search { query, .. } => texts.extend(query.query.clone()),
            _ => {}
        }
        counts.push(texts.len() - before);
    }
    let mut vectors = index.embed_checked(&texts).await?.into_iter();
    Ok(counts
        .into_iter()
        .map(|n| vectors.by_ref().take(n).collect())
        .collect())
}

/// The texts of `value` at `fields` (see [`IndexConfig::fields`]), in order: a string
/// as it is, anything else as its JSON text. Paths that are absent are skipped.
pub fn texts_to_embed(value: &Value, fields: &[String]) -> Vec<String> {
    let mut texts = Vec::new();
    for field in fields {
        let path = field.strip_prefix('$').unwrap_or(field);
        let path = path.strip_prefix('.').unwrap_or(path);
        let mut found = vec![value];
        for segment in path.split('.').filter(|s| !s.is_empty()) {
            found = found
                .into_iter()
                .flat_map(|node| step(node, segment))
                .collect();
        }
        texts.extend(found.into_iter().map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }));
    }
    texts
}

/// One path segment (`name`, `name[*]`, `name[3]`, `[*]`) applied to `node`.
fn step<'v>(node: &'v Value, segment: &str) -> Vec<&'v Value> {
    let (name, index) = match segment.find('[') {
        Some(open) if segment.ends_with(']') => (
            &segment[..open],
            Some(&segment[open + 1..segment.len() - 1]),
        ),
        _ => (segment, None),
    };
    let node = if name.is_empty() {
        Some(node)
    } else {
        node.as_object().and_then(|o| o.get(name))
    };
    let Some(node) = node else {
        return Vec::new();
    };
    match index {
        None => vec![node],
        Some("*") => node
            .as_array()
            .map(|a| a.iter().collect())
            .unwrap_or_default(),
        Some(i) => i
            .parse::<usize>()
            .ok()
            .and_then(|i| node.as_array()?.get(i))
            .into_iter()
            .collect(),
    }
}

/// Cosine similarity of two vectors, computed in `f64`; 0 when either is all zeros
/// or their lengths differ.
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    if a.len() != b.len() {
        return 0.0;
    }
    let (mut dot, mut na, mut nb) = (0.0f64, 0.0f64, 0.0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        return 0.0;
    }
    dot / (na.sqrt() * nb.sqrt())
}

/// An item's score for a query: the best [`cosine`] of its vectors, `None` when it
/// has none (it was put with [`IndexFields::Skip`], or no path was present).
pub fn best_score<V: AsRef<[f32]>>(query: &[f32], vectors: &[V]) -> Option<f64> {
    vectors
        .iter()
        .map(|v| cosine(query, v.as_ref()))
        .max_by(f64::total_cmp)
}

/// Orders search hits as every backend must, then applies `offset` and `limit`.
///
/// `ranked` (a search with a query): score descending, items without a score last,
/// ties by (namespace, key). Otherwise: `updated_at` descending, then (namespace,
/// key).
pub fn order_hits(
    mut hits: Vec<SearchItem>,
    ranked: bool,
    offset: usize,
    limit: usize,
) -> Vec<SearchItem> {
    let by_address = |a: &SearchItem, b: &SearchItem| {
        (&a.item.namespace, &a.item.key).cmp(&(&b.item.namespace, &b.item.key))
    };
    if ranked {
        hits.sort_by(|a, b| {
            let by_score = match (a.score, b.score) {
                (Some(x), Some(y)) => y.total_cmp(&x),
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (None, None) => Ordering::Equal,
            };
            by_score.then_with(|| by_address(a, b))
        });
    } else {
        hits.sort_by(|a, b| {
            b.item
                .updated_at
                .cmp(&a.item.updated_at)
                .then_with(|| by_address(a, b))
        });
    }
    hits.into_iter().skip(offset).take(limit).collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn texts_follow_paths_and_skip_absent_ones() {
        let v = json!({"title": "T", "n": 3, "items": [{"text": "a"}, {"text": "b"}, {}]});
        let paths = |p: &[&str]| p.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            texts_to_embed(&v, &paths(&["title", "$.n", "gone"])),
            ["T", "3"]
        );
        assert_eq!(texts_to_embed(&v, &paths(&["items[*].text"])), ["a", "b"]);
        assert_eq!(
            texts_to_embed(&v, &paths(&["items[1].text", "items[9]"])),
            ["b"]
        );
        assert_eq!(
            texts_to_embed(&json!({"a": 1}), &paths(&["$"])),
            [r#"{"a":1}"#]
        );
    }

    #[test]
    fn cosine_is_scale_free_and_zero_safe() {
        assert!((cosine(&[1.0, 0.0], &[2.0, 0.0]) - 1.0).abs() < 1e-12);
        assert!(cosine(&[1.0, 0.0], &[0.0, 3.0]).abs() < 1e-12);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 1.0]), 0.0);
        assert_eq!(best_score::<Vec<f32>>(&[1.0], &[]), None);
    }
}
