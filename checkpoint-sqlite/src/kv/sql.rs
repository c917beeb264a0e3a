//! The store's tables and the SQL of each operation, run on one connection inside
//! one transaction per batch.
//!
//! A namespace is stored as its labels joined by `.` (labels never contain one), so
//! the items under a prefix are one range of the primary key: the prefix itself, and
//! everything from `prefix.` up to (not including) `prefix/` (`/` is the character
//! after `.`). Times are nanoseconds since the Unix epoch. Vectors are little-endian
//! `f32` blobs, one row per embedded text, searched by an exact scan.

use std::path::Path;
use std::time::{Duration, SystemTime};

use rusqlite::{Connection, TransactionBehavior, params_from_iter};
use stategraph::store::{self, Namespace, NamespaceQuery, SearchItem, StoreOutput};

use super::rows::{get, nanos, under};
use super::search;
use crate::error::{Failure, SqliteError};
use crate::schema::Tables;
use stategraph::store::backend::{self as plan, Planned, Refresh};

/// Each step moves the store's tables one version forward; never edit a released
/// step, add one.
const MIGRATIONS: &[&str] = &[
    // Version 1. `ttl` is the item's time-to-live in nanoseconds, kept so that a
    // refreshing read can move `expires_at` again.
    "CREATE TABLE stategraph_store_items (
        prefix     TEXT NOT NULL,
        key        TEXT NOT NULL,
        value      TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        expires_at INTEGER,
        ttl        INTEGER,
        PRIMARY KEY (prefix, key)
    ) WITHOUT ROWID;
    CREATE INDEX stategraph_store_items_expiry
        ON stategraph_store_items (expires_at) WHERE expires_at IS NOT NULL;
    CREATE TABLE stategraph_store_vectors (
        prefix    TEXT NOT NULL,
        key       TEXT NOT NULL,
        idx       INTEGER NOT NULL,
        embedding BLOB NOT NULL,
        PRIMARY KEY (prefix, key, idx)
    ) WITHOUT ROWID;",
];

/// The store's tables, versioned as `store_schema_version` in `stategraph_meta`.
pub(crate) const STORE_TABLES: Tables = Tables {
    meta_key: "store_schema_version",
    steps: MIGRATIONS,
    marker: "stategraph_store_items",
    newer: |path, found, supported| SqliteError::NewerStoreTables {
        path: path.to_path_buf(),
        found,
        supported,
    },
    bad: |path, value| SqliteError::BadStoreTableVersion {
        path: path.to_path_buf(),
        value,
    },
    missing: |path| SqliteError::MissingStoreTableVersion {
        path: path.to_path_buf(),
    },
};

/// The version of the store's tables this build creates and reads.
pub const STORE_TABLE_VERSION: i64 = MIGRATIONS.len() as i64;

/// Runs a planned batch in one transaction. A batch that writes takes the write lock
/// for its whole length, so its reads see its own puts and nothing else interleaves;
/// a batch that only reads runs in a read transaction and refreshes the time-to-live
/// of its hits afterwards, in a short write transaction of its own.
pub(crate) fn apply(
    conn: &mut Connection,
    path: &Path,
    ops: Vec<Planned>,
    now: SystemTime,
) -> Result<Vec<StoreOutput>, Failure> {
    let writes = ops.iter().any(|op| matches!(op, Planned::Put { .. }));
    let behavior = if writes {
        TransactionBehavior::Immediate
    } else {
        TransactionBehavior::Deferred
    };
    let tx = conn.transaction_with_behavior(behavior)?;
    let mut refresh = Vec::new();
    let mut out = Vec::with_capacity(ops.len());
    for op in ops {
        out.push(match op {
            Planned::Get {
                namespace,
                key,
                refresh: refreshes,
            } => {
                let item = get(&tx, path, &namespace, &key, now)?;
                StoreOutput::Item(item.map(|stored| {
                    if refreshes {
                        plan::refreshed(stored, now, &mut refresh)
                    } else {
                        stored.item
                    }
                }))
            }
            Planned::Put {
                namespace,
                key,
                value,
                ttl,
                vectors,
            } => {
                put(&tx, &namespace, &key, value.as_ref(), ttl, vectors, now)?;
                StoreOutput::Done
            }
            Planned::Search {
                prefix,
                search,
                query,
                refresh: refreshes,
            } => {
                let hits = search::search(&tx, path, &prefix, &search, query.as_deref(), now)?;
                StoreOutput::Items(
                    hits.into_iter()
                        .map(|(stored, score)| SearchItem {
                            item: if refreshes {
                                plan::refreshed(stored, now, &mut refresh)
                            } else {
                                stored.item
                            },
                            score,
                        })
                        .collect(),
                )
            }
            Planned::List(query) => StoreOutput::Namespaces(namespaces(&tx, &query, now)?),
        });
        // In a writing batch, at once: a later put of the item sets its own expiry.
        if writes {
            refresh_all(&tx, &refresh, now)?;
            refresh.clear();
        }
    }
    if writes {
        tx.commit()?;
    } else {
        drop(tx);
        if !refresh.is_empty() {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            refresh_all(&tx, &refresh, now)?;
            tx.commit()?;
        }
    }
    Ok(out)
}

/// Deletes the expired items and their vectors; returns how many items.
pub(crate) fn sweep(conn: &mut Connection, now: SystemTime) -> Result<usize, Failure> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let now = nanos(now);
    tx.execute(
        "DELETE FROM stategraph_store_vectors WHERE (prefix, key) IN (
             SELECT prefix, key FROM stategraph_store_items
             WHERE expires_at IS NOT NULL AND expires_at <= ?1)",
        [now],
    )?;
    let removed = tx.execute(
        "DELETE FROM stategraph_store_items WHERE expires_at IS NOT NULL AND expires_at <= ?1",
        [now],
    )?;
    tx.commit()?;
    Ok(removed)
}

fn ttl_nanos(ttl: Duration) -> i64 {
    i64::try_from(ttl.as_nanos()).unwrap_or(i64::MAX)
}

fn put(
    tx: &Connection,
    namespace: &[String],
    key: &str,
    value: Option<&serde_json::Value>,
    ttl: Option<Duration>,
    vectors: Vec<Vec<f32>>,
    now: SystemTime,
) -> Result<(), Failure> {
    let prefix = namespace.join(".");
    tx.prepare_cached("DELETE FROM stategraph_store_vectors WHERE prefix = ?1 AND key = ?2")?
        .execute((&prefix, key))?;
    let Some(value) = value else {
        tx.prepare_cached("DELETE FROM stategraph_store_items WHERE prefix = ?1 AND key = ?2")?
            .execute((&prefix, key))?;
        return Ok(());
    };
    let expires_at = store::expiry(now, ttl).map(nanos);
    // A key whose item expired (but was not swept yet) starts over: a new item.
    tx.prepare_cached(
        "INSERT INTO stategraph_store_items
             (prefix, key, value, created_at, updated_at, expires_at, ttl)
         VALUES (?1, ?2, ?3, ?4, ?4, ?5, ?6)
         ON CONFLICT (prefix, key) DO UPDATE SET
             value = excluded.value,
             created_at = CASE WHEN expires_at IS NOT NULL AND expires_at <= excluded.updated_at
                               THEN excluded.created_at ELSE created_at END,
             updated_at = excluded.updated_at,
             expires_at = excluded.expires_at,
             ttl = excluded.ttl",
    )?
    .execute((
        &prefix,
        key,
        value.to_string(),
        nanos(now),
        expires_at,
        ttl.map(ttl_nanos),
    ))?;
    let mut insert = tx.prepare_cached(
        "INSERT INTO stategraph_store_vectors (prefix, key, idx, embedding)
         VALUES (?1, ?2, ?3, ?4)",
    )?;
    for (idx, vector) in vectors.iter().enumerate() {
        let idx = i64::try_from(idx).unwrap_or(i64::MAX);
        insert.execute((&prefix, key, idx, plan::to_blob(vector)))?;
    }
    Ok(())
}

/// The namespaces of live items that `query` selects.
fn namespaces(
    tx: &Connection,
    query: &NamespaceQuery,
    now: SystemTime,
) -> Result<Vec<Namespace>, Failure> {
    // The labels before the first wildcard narrow the scan to one range.
    let fixed: Vec<String> = query
        .prefix
        .iter()
        .flatten()
        .take_while(|label| *label != "*")
        .cloned()
        .collect();
    let (condition, mut params) = under("prefix", &fixed, 2);
    params.insert(0, nanos(now).into());
    let mut stmt = tx.prepare_cached(&format!(
        "SELECT DISTINCT prefix FROM stategraph_store_items
         WHERE {condition} AND (expires_at IS NULL OR expires_at > ?1)"
    ))?;
    let prefixes = stmt
        .query_map(params_from_iter(params.iter()), |row| {
            row.get::<_, String>(0)
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(plan::list_namespaces(
        prefixes.iter().map(|p| plan::split(p)),
        query,
    ))
}

/// Moves the expiry of each refreshed item that is still live.
fn refresh_all(tx: &Connection, refresh: &[Refresh], now: SystemTime) -> Result<(), Failure> {
    let mut stmt = tx.prepare_cached(
        "UPDATE stategraph_store_items SET expires_at = ?3
         WHERE prefix = ?1 AND key = ?2 AND (expires_at IS NULL OR expires_at > ?4)",
    )?;
    for (namespace, key, expires_at) in refresh {
        stmt.execute((namespace.join("."), key, expires_at.map(nanos), nanos(now)))?;
    }
    Ok(())
}
