//! Searches that read as few items as their order allows, with the result the shared
//! rules give over every live item under the prefix (see `plan::rank`):
//!
//! - without a query, items are fetched newest first, a page of rows at a time from
//!   a portal, until the page is full and the next item is older than the last one
//!   kept (items of one timestamp are all read: their tie is broken by address);
//! - with a query, the vectors alone are scanned and scored (no value is parsed),
//!   then items are read in score order, through the filter, until the page is full;
//!   only when the scored items do not fill it are the unscored ones read.

use std::time::SystemTime;

use deadpool_postgres::Transaction;
use stategraph::store::{self, SearchQuery};

use super::rows::{COLUMNS, get, nanos, params, read_item, under};
use crate::error::Failure;
use stategraph::store::backend::{self as plan, Stored};

/// Rows fetched from the portal at a time by a newest-first search.
const CHUNK: i32 = 256;

/// The page of hits of `search` under `labels`, each with its score.
pub(super) async fn search(
    tx: &Transaction<'_>,
    labels: &[String],
    search: &SearchQuery,
    query: Option<&[f32]>,
    now: SystemTime,
) -> Result<Vec<(Stored, Option<f64>)>, Failure> {
    if search.limit == 0 {
        return Ok(Vec::new());
    }
    let wanted = search.offset.saturating_add(search.limit);
    match query {
        None => {
            let candidates = newest(tx, labels, search, wanted, now).await?;
            Ok(plan::rank(candidates, search, None))
        }
        Some(query) => ranked(tx, labels, search, query, wanted, now).await,
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
async fn newest(
    tx: &Transaction<'_>,
    labels: &[String],
    search: &SearchQuery,
    wanted: usize,
    now: SystemTime,
) -> Result<Vec<Stored>, Failure> {
    let (condition, texts) = under("prefix", labels, 2);
    let now = nanos(now);
    let stmt = tx
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM stategraph_store_items
             WHERE {condition} AND (expires_at IS NULL OR expires_at > $1)
             ORDER BY updated_at DESC"
        ))
        .await?;
    let portal = tx.bind(&stmt, &params(&now, &texts)).await?;
    let mut found = Vec::new();
    let mut boundary: Option<i64> = None;
    loop {
        let rows = tx.query_portal(&portal, CHUNK).await?;
        if rows.is_empty() {
            return Ok(found);
        }
        for row in &rows {
            let updated_at: i64 = row.try_get(4)?;
            if boundary.is_some_and(|b| updated_at != b) {
                return Ok(found);
            }
            let stored = read_item(row)?;
            if matches(search, &stored) {
                found.push(stored);
                if found.len() >= wanted {
                    boundary = Some(updated_at);
                }
            }
        }
    }
}

/// The page of a semantic search: scored items by score (ties by address), then the
/// unscored ones by address.
async fn ranked(
    tx: &Transaction<'_>,
    labels: &[String],
    search: &SearchQuery,
    query: &[f32],
    wanted: usize,
    now: SystemTime,
) -> Result<Vec<(Stored, Option<f64>)>, Failure> {
    let (condition, texts) = under("v.prefix", labels, 2);
    let at = nanos(now);
    let stmt = tx
        .prepare_cached(&format!(
            "SELECT v.prefix, v.key, v.embedding FROM stategraph_store_vectors AS v
             JOIN stategraph_store_items AS i ON i.prefix = v.prefix AND i.key = v.key
             WHERE {condition} AND (i.expires_at IS NULL OR i.expires_at > $1)"
        ))
        .await?;
    let mut best = plan::BestScores::default();
    for row in tx.query(&stmt, &params(&at, &texts)).await? {
        let blob: &[u8] = row.try_get(2)?;
        let score = store::cosine(query, &plan::from_blob(blob));
        best.add(row.try_get(0)?, row.try_get(1)?, score);
    }
    let mut hits = Vec::new();
    for (score, namespace, key) in best.ranked() {
        if hits.len() >= wanted {
            break;
        }
        if let Some(stored) = get(tx, &namespace, &key, now).await?
            && matches(search, &stored)
        {
            hits.push((stored, Some(score)));
        }
    }
    if hits.len() < wanted {
        let (condition, texts) = under("i.prefix", labels, 2);
        let stmt = tx
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM stategraph_store_items AS i
                 WHERE {condition} AND (i.expires_at IS NULL OR i.expires_at > $1)
                   AND NOT EXISTS (SELECT 1 FROM stategraph_store_vectors AS v
                                   WHERE v.prefix = i.prefix AND v.key = i.key)"
            ))
            .await?;
        let mut unscored = Vec::new();
        for row in tx.query(&stmt, &params(&at, &texts)).await? {
            let stored = read_item(&row)?;
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
