//! Searches that read as few items as their order allows. The result is the one the
//! shared rules give over every live item under the prefix (see `plan::rank`); only
//! the reading is shorter:
//!
//! - without a query, items are read newest first and the scan stops once the page
//!   is full and the next item is older than the last one kept (items of one
//!   timestamp are all read, since the shared order breaks their tie by address);
//! - with a query, the vectors alone are scanned and scored (no value is parsed),
//!   then items are read in score order, through the filter, until the page is full;
//!   only when the scored items do not fill it are the unscored ones read.

use std::path::Path;
use std::time::SystemTime;

use rusqlite::{Connection, params_from_iter};
use stategraph::store::{self, SearchQuery};

use super::rows::{COLUMNS, get, nanos, read_item, under};
use crate::error::Failure;
use stategraph::store::backend::{self as plan, Stored};

/// The page of hits of `search` under `labels`, each with its score.
pub(super) fn search(
    tx: &Connection,
    path: &Path,
    labels: &[String],
    search: &SearchQuery,
    query: Option<&[f32]>,
    now: SystemTime,
) -> Result<Vec<(Stored, Option<f64>)>, Failure> {
    let wanted = search.offset.saturating_add(search.limit);
    if search.limit == 0 {
        return Ok(Vec::new());
    }
    match query {
        None => {
            let candidates = newest(tx, path, labels, search, wanted, now)?;
            Ok(plan::rank(candidates, search, None))
        }
        Some(query) => ranked(tx, path, labels, search, query, wanted, now),
    }
}

fn matches(search: &SearchQuery, stored: &Stored) -> bool {
    search
        .filter
        .as_ref()
        .is_none_or(|f| f.matches(&stored.item.value))
}

/// The matching items, newest first, up to the first `wanted` and every item as new
/// as the last of them.
fn newest(
    tx: &Connection,
    path: &Path,
    labels: &[String],
    search: &SearchQuery,
    wanted: usize,
    now: SystemTime,
) -> Result<Vec<Stored>, Failure> {
    let (condition, mut params) = under("prefix", labels, 2);
    params.insert(0, nanos(now).into());
    let mut stmt = tx.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM stategraph_store_items
         WHERE {condition} AND (expires_at IS NULL OR expires_at > ?1)
         ORDER BY updated_at DESC"
    ))?;
    let mut rows = stmt.query(params_from_iter(params.iter()))?;
    let mut found = Vec::new();
    let mut boundary: Option<i64> = None;
    while let Some(row) = rows.next()? {
        let updated_at: i64 = row.get(4)?;
        if boundary.is_some_and(|b| updated_at != b) {
            break;
        }
        let stored = read_item(row, path)?;
        if matches(search, &stored) {
            found.push(stored);
            if found.len() >= wanted {
                boundary = Some(updated_at);
            }
        }
    }
    Ok(found)
}

/// The page of a semantic search: scored items by score (ties by address), then the
/// unscored ones by address.
fn ranked(
    tx: &Connection,
    path: &Path,
    labels: &[String],
    search: &SearchQuery,
    query: &[f32],
    wanted: usize,
    now: SystemTime,
) -> Result<Vec<(Stored, Option<f64>)>, Failure> {
    let (condition, mut params) = under("v.prefix", labels, 2);
    params.insert(0, nanos(now).into());
    let mut best = plan::BestScores::default();
    {
        let mut stmt = tx.prepare_cached(&format!(
            "SELECT v.prefix, v.key, v.embedding FROM stategraph_store_vectors AS v
             JOIN stategraph_store_items AS i ON i.prefix = v.prefix AND i.key = v.key
             WHERE {condition} AND (i.expires_at IS NULL OR i.expires_at > ?1)"
        ))?;
        let mut rows = stmt.query(params_from_iter(params.iter()))?;
        while let Some(row) = rows.next()? {
            let vector = plan::from_blob(row.get_ref(2)?.as_blob().unwrap_or_default());
            best.add(row.get(0)?, row.get(1)?, store::cosine(query, &vector));
        }
    }
    let mut hits = Vec::new();
    for (score, namespace, key) in best.ranked() {
        if hits.len() >= wanted {
            break;
        }
        if let Some(stored) = get(tx, path, &namespace, &key, now)?
            && matches(search, &stored)
        {
            hits.push((stored, Some(score)));
        }
    }
    if hits.len() < wanted {
        let mut unscored = Vec::new();
        let (condition, mut params) = under("i.prefix", labels, 2);
        params.insert(0, nanos(now).into());
        let mut stmt = tx.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM stategraph_store_items AS i
             WHERE {condition} AND (i.expires_at IS NULL OR i.expires_at > ?1)
               AND NOT EXISTS (SELECT 1 FROM stategraph_store_vectors AS v
                               WHERE v.prefix = i.prefix AND v.key = i.key)"
        ))?;
        let mut rows = stmt.query(params_from_iter(params.iter()))?;
        while let Some(row) = rows.next()? {
            let stored = read_item(row, path)?;
            if matches(search, &stored) {
                unscored.push(stored);
            }
        }
        unscored.sort_by(|a, b| {
            (&a.item.namespace, &a.item.key).cmp(&(&b.item.namespace, &b.item.key))
        });
        hits.extend(unscored.into_iter().map(|stored| (stored, None)));
    }
    Ok(hits
        .into_iter()
        .skip(search.offset)
        .take(search.limit)
        .collect())
}
