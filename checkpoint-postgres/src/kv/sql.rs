//! The store's tables and the SQL of each operation, one transaction per batch.
//!
//! A namespace is stored as its labels joined by `.` (labels never contain one), in
//! the `C` collation, so the items under a prefix are one range of the primary key:
//! the prefix itself, and everything from `prefix.` up to (not including) `prefix/`.
//! Times are nanoseconds since the Unix epoch, taken from the writing process's
//! clock (as the in-memory store does). Vectors are little-endian `f32`s in `bytea`,
//! searched by an exact scan (`search.rs`): pgvector is not needed.
//!
//! Writers take a transaction-level advisory lock per item they write, in key order,
//! before writing anything: two batches writing the same items in different orders
//! wait for each other instead of deadlocking.

use std::time::{Duration, SystemTime};

use deadpool_postgres::{Client, Transaction};
use sha2::{Digest, Sha256};
use stategraph::store::{self, Namespace, NamespaceQuery, SearchItem, StoreOutput};

use super::rows::{get, nanos, params, under};
use super::search;
use crate::error::{Failure, PostgresError};
use crate::schema::Tables;
use stategraph::store::backend::{self as plan, Planned, Refresh};

/// Each step moves the store's tables one version forward; never edit a released
/// step, add one.
const MIGRATIONS: &[&str] = &[
    // Version 1. `ttl` is the item's time-to-live in nanoseconds, kept so that a
    // refreshing read can move `expires_at` again.
    "CREATE TABLE stategraph_store_items (
        prefix     TEXT COLLATE \"C\" NOT NULL,
        key        TEXT COLLATE \"C\" NOT NULL,
        value      TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        expires_at BIGINT,
        ttl        BIGINT,
        PRIMARY KEY (prefix, key)
    );
    CREATE INDEX stategraph_store_items_expiry
        ON stategraph_store_items (expires_at) WHERE expires_at IS NOT NULL;
    CREATE TABLE stategraph_store_vectors (
        prefix    TEXT COLLATE \"C\" NOT NULL,
        key       TEXT COLLATE \"C\" NOT NULL,
        idx       INTEGER NOT NULL,
        embedding BYTEA NOT NULL,
        PRIMARY KEY (prefix, key, idx)
    );",
];

/// The store's tables, versioned as `store_schema_version` in `stategraph_meta`.
pub(crate) const STORE_TABLES: Tables = Tables {
    meta_key: "store_schema_version",
    steps: MIGRATIONS,
    marker: "stategraph_store_items",
    newer: |schema, found, supported| PostgresError::NewerStoreTables {
        schema: schema.to_string(),
        found,
        supported,
    },
    bad: |schema, value| PostgresError::BadStoreTableVersion {
        schema: schema.to_string(),
        value,
    },
    missing: |schema| PostgresError::MissingStoreTableVersion {
        schema: schema.to_string(),
    },
};

/// The version of the store's tables this build creates and reads.
pub const STORE_TABLE_VERSION: i64 = MIGRATIONS.len() as i64;

/// Runs a planned batch in one transaction (committed only when every op
/// succeeded).
pub(crate) async fn apply(
    client: &mut Client,
    schema: &str,
    ops: &[Planned],
    now: SystemTime,
) -> Result<Vec<StoreOutput>, Failure> {
    let writes = ops.iter().any(|op| matches!(op, Planned::Put { .. }));
    let tx = client.transaction().await?;
    lock_items(&tx, schema, ops).await?;
    let mut refresh = Vec::new();
    let mut out = Vec::with_capacity(ops.len());
    for op in ops {
        out.push(match op {
            Planned::Get {
                namespace,
                key,
                refresh: refreshes,
            } => {
                let item = get(&tx, namespace, key, now).await?;
                StoreOutput::Item(item.map(|stored| {
                    if *refreshes {
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
                put(&tx, namespace, key, value.as_ref(), *ttl, vectors, now).await?;
                StoreOutput::Done
            }
            Planned::Search {
                prefix,
                search,
                query,
                refresh: refreshes,
            } => {
                let hits = search::search(&tx, prefix, search, query.as_deref(), now).await?;
                StoreOutput::Items(
                    hits.into_iter()
                        .map(|(stored, score)| SearchItem {
                            item: if *refreshes {
                                plan::refreshed(stored, now, &mut refresh)
                            } else {
                                stored.item
                            },
                            score,
                        })
                        .collect(),
                )
            }
            Planned::List(query) => StoreOutput::Namespaces(namespaces(&tx, query, now).await?),
        });
        // In a writing batch, at once: a later put of the item sets its own expiry.
        if writes {
            refresh_all(&tx, &mut refresh, now).await?;
            refresh.clear();
        }
    }
    refresh_all(&tx, &mut refresh, now).await?;
    tx.commit().await?;
    Ok(out)
}

/// Deletes the expired items and their vectors; returns how many items.
pub(crate) async fn sweep(client: &mut Client, now: SystemTime) -> Result<usize, Failure> {
    let tx = client.transaction().await?;
    let now = nanos(now);
    let removed = tx
        .query(
            "DELETE FROM stategraph_store_items
             WHERE expires_at IS NOT NULL AND expires_at <= $1
             RETURNING prefix, key",
            &[&now],
        )
        .await?;
    let (prefixes, keys): (Vec<String>, Vec<String>) = removed
        .iter()
        .map(|row| (row.get::<_, String>(0), row.get::<_, String>(1)))
        .unzip();
    tx.execute(
        "DELETE FROM stategraph_store_vectors AS v
         USING unnest($1::text[], $2::text[]) AS gone (prefix, key)
         WHERE v.prefix = gone.prefix AND v.key = gone.key",
        &[&prefixes, &keys],
    )
    .await?;
    tx.commit().await?;
    Ok(removed.len())
}

/// The advisory lock key of an item: 64 bits of a hash of the schema, namespace and
/// key.
fn item_key(schema: &str, prefix: &str, key: &str) -> i64 {
    let mut hasher = Sha256::new();
    for part in [
        b"stategraph-store".as_slice(),
        schema.as_bytes(),
        prefix.as_bytes(),
    ] {
        hasher.update(part);
        hasher.update(b"\0");
    }
    hasher.update(key.as_bytes());
    let digest = hasher.finalize();
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    i64::from_be_bytes(bytes)
}

/// Takes the advisory lock of every item the batch writes, in key order.
async fn lock_items(tx: &Transaction<'_>, schema: &str, ops: &[Planned]) -> Result<(), Failure> {
    let mut keys: Vec<i64> = ops
        .iter()
        .filter_map(|op| match op {
            Planned::Put { namespace, key, .. } => {
                Some(item_key(schema, &namespace.join("."), key))
            }
            _ => None,
        })
        .collect();
    if keys.is_empty() {
        return Ok(());
    }
    keys.sort_unstable();
    keys.dedup();
    // The sorted subquery is not flattened, so the locks are taken in its order.
    tx.execute(
        "SELECT count(pg_advisory_xact_lock(k))
         FROM (SELECT k FROM unnest($1::bigint[]) AS k ORDER BY k) AS sorted",
        &[&keys],
    )
    .await?;
    Ok(())
}

async fn put(
    tx: &Transaction<'_>,
    namespace: &[String],
    key: &str,
    value: Option<&serde_json::Value>,
    ttl: Option<Duration>,
    vectors: &[Vec<f32>],
    now: SystemTime,
) -> Result<(), Failure> {
    let prefix = namespace.join(".");
    let drop_vectors = tx
        .prepare_cached("DELETE FROM stategraph_store_vectors WHERE prefix = $1 AND key = $2")
        .await?;
    tx.execute(&drop_vectors, &[&prefix, &key]).await?;
    let Some(value) = value else {
        let delete = tx
            .prepare_cached("DELETE FROM stategraph_store_items WHERE prefix = $1 AND key = $2")
            .await?;
        tx.execute(&delete, &[&prefix, &key]).await?;
        return Ok(());
    };
    let expires_at = store::expiry(now, ttl).map(nanos);
    let ttl = ttl.map(|t| i64::try_from(t.as_nanos()).unwrap_or(i64::MAX));
    // A key whose item expired (but was not swept yet) starts over: a new item.
    let upsert = tx
        .prepare_cached(
            "INSERT INTO stategraph_store_items AS i
                 (prefix, key, value, created_at, updated_at, expires_at, ttl)
             VALUES ($1, $2, $3, $4, $4, $5, $6)
             ON CONFLICT (prefix, key) DO UPDATE SET
                 value = excluded.value,
                 created_at = CASE WHEN i.expires_at IS NOT NULL
                                        AND i.expires_at <= excluded.updated_at
                                   THEN excluded.created_at ELSE i.created_at END,
                 updated_at = excluded.updated_at,
                 expires_at = excluded.expires_at,
                 ttl = excluded.ttl",
        )
        .await?;
    tx.execute(
        &upsert,
        &[
            &prefix,
            &key,
            &value.to_string(),
            &nanos(now),
            &expires_at,
            &ttl,
        ],
    )
    .await?;
    if !vectors.is_empty() {
        let blobs: Vec<Vec<u8>> = vectors.iter().map(|v| plan::to_blob(v)).collect();
        let insert = tx
            .prepare_cached(
                "INSERT INTO stategraph_store_vectors (prefix, key, idx, embedding)
                 SELECT $1, $2, (n - 1)::integer, embedding
                 FROM unnest($3::bytea[]) WITH ORDINALITY AS v (embedding, n)",
            )
            .await?;
        tx.execute(&insert, &[&prefix, &key, &blobs]).await?;
    }
    Ok(())
}

/// The namespaces of live items that `query` selects.
async fn namespaces(
    tx: &Transaction<'_>,
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
    let (condition, texts) = under("prefix", &fixed, 2);
    let now = nanos(now);
    let stmt = tx
        .prepare_cached(&format!(
            "SELECT DISTINCT prefix FROM stategraph_store_items
             WHERE {condition} AND (expires_at IS NULL OR expires_at > $1)"
        ))
        .await?;
    let rows = tx.query(&stmt, &params(&now, &texts)).await?;
    let prefixes = rows
        .iter()
        .map(|row| row.try_get::<_, String>(0))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(plan::list_namespaces(
        prefixes.iter().map(|p| plan::split(p)),
        query,
    ))
}

/// Moves the expiry of each refreshed item that is still live, in key order (so
/// refreshing batches lock rows in one order).
async fn refresh_all(
    tx: &Transaction<'_>,
    refresh: &mut [Refresh],
    now: SystemTime,
) -> Result<(), Failure> {
    if refresh.is_empty() {
        return Ok(());
    }
    refresh.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    let prefixes: Vec<String> = refresh.iter().map(|r| r.0.join(".")).collect();
    let keys: Vec<&str> = refresh.iter().map(|r| r.1.as_str()).collect();
    let expiries: Vec<Option<i64>> = refresh.iter().map(|r| r.2.map(nanos)).collect();
    tx.execute(
        "UPDATE stategraph_store_items AS i SET expires_at = r.expires_at
         FROM unnest($1::text[], $2::text[], $3::bigint[]) AS r (prefix, key, expires_at)
         WHERE i.prefix = r.prefix AND i.key = r.key
           AND (i.expires_at IS NULL OR i.expires_at > $4)",
        &[&prefixes, &keys, &expiries, &nanos(now)],
    )
    .await?;
    Ok(())
}
