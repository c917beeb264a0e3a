//! The in-memory store as the reference of another backend's searches: a backend may
//! read less than a full scan (stop early, score before reading values), but every
//! page it returns must equal the reference's.

use serde_json::json;
use stategraph::store::{
    Filter, InMemoryStore, IndexFields, PutOptions, SearchItem, SearchQuery, Store, StoreOp,
};

use crate::store_conformance::test_index;

/// What a search returned, without the times (which differ between stores).
fn shape(hits: &[SearchItem]) -> Vec<(Vec<String>, String, serde_json::Value, Option<f64>)> {
    hits.iter()
        .map(|h| {
            (
                h.item.namespace.clone(),
                h.item.key.clone(),
                h.item.value.clone(),
                h.score,
            )
        })
        .collect()
}

/// The SQLite store reads fewer rows than a full scan when it can (newest first with
/// an early stop, scores before values); over a corpus with many equal timestamps,
/// unembedded items and filters of every selectivity, every page it returns equals
/// the in-memory reference store's.
/// Puts one corpus into `store` (built with [`test_index`]) and into an
/// [`InMemoryStore`], then compares 180 search pages of the two: over many equal
/// timestamps (items of one batch share theirs), unembedded items, namespaces whose
/// text order and label order differ, filters of every selectivity, with and without
/// a query, at several offsets and limits.
///
/// # Panics
/// At the first page that differs, naming its search.
pub async fn pages_match_reference(store: &dyn Store) {
    let memory = InMemoryStore::new().with_index(test_index());
    let words = ["red", "green", "blue", "cyan", "amber", "violet", "teal"];
    // 12 batches of 25: items of one batch share their `updated_at`.
    for batch in 0..12 {
        let ops: Vec<StoreOp> = (0..25)
            .map(|j| {
                let i = batch * 25 + j;
                let text = format!("{} {} {}", words[i % 7], words[(i / 7) % 7], words[i % 3]);
                let value = if i % 11 == 0 {
                    json!({"n": i % 9, "kind": "untexted"})
                } else {
                    json!({"n": i % 9, "kind": words[i % 4], "text": text})
                };
                let index = if i % 13 == 0 {
                    IndexFields::Skip
                } else {
                    IndexFields::Configured
                };
                StoreOp::Put {
                    // `org-b` sorts before `org.…` as text but after `org` as
                    // labels: the order must come from the labels.
                    namespace: vec![
                        if i % 5 == 0 { "org-b" } else { "org" }.into(),
                        format!("team{}", i % 4),
                    ],
                    key: format!("k{:03}", (i * 37) % 300),
                    value: Some(value),
                    options: PutOptions::new().index(index),
                }
            })
            .collect();
        store.batch(ops.clone()).await.unwrap();
        memory.batch(ops).await.unwrap();
    }
    let filters = [
        None,
        Some(json!({"n": {"$gte": 4}})),
        Some(json!({"kind": "red"})),
        Some(json!({"n": 100})),
    ];
    let mut compared = 0;
    for prefix in [vec![], vec!["org"], vec!["org", "team2"]] {
        for filter in &filters {
            for query in [None, Some("blue amber"), Some("violet teal red")] {
                for (offset, limit) in [(0, 10), (5, 7), (20, 50), (0, 400), (290, 20)] {
                    let mut q = SearchQuery::new().offset(offset).limit(limit);
                    if let Some(f) = filter {
                        q = q.filter(Filter::parse(f).unwrap());
                    }
                    if let Some(text) = query {
                        q = q.query(text);
                    }
                    let got = store.search(&prefix, q.clone()).await.unwrap();
                    let want = memory.search(&prefix, q).await.unwrap();
                    assert_eq!(
                        shape(&got),
                        shape(&want),
                        "prefix {prefix:?}, filter {filter:?}, query {query:?}, offset {offset}, limit {limit}"
                    );
                    compared += 1;
                }
            }
        }
    }
    assert_eq!(compared, 3 * 4 * 3 * 5);
}
