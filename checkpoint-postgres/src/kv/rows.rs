//! Reading the store's item rows: the columns, times as nanoseconds, an item
//! from its row, one item by its address, the namespace-prefix condition and
//! query parameters — what both the batch operations and the searches use.

use std::time::{Duration, SystemTime};

use deadpool_postgres::Transaction;
use stategraph::store::Item;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use crate::error::{Failure, PostgresError};
use stategraph::store::backend::{self as plan, Stored};

pub(super) const COLUMNS: &str = "prefix, key, value, created_at, updated_at, expires_at, ttl";

/// Nanoseconds since the Unix epoch (0 before it, `i64::MAX` past 2262).
pub(super) fn nanos(time: SystemTime) -> i64 {
    time.duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

fn time(nanos: i64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_nanos(u64::try_from(nanos).unwrap_or(0))
}

/// The item in `row` (of [`COLUMNS`]); a value that is not JSON is a corrupt row.
pub(super) fn read_item(row: &Row) -> Result<Stored, Failure> {
    let prefix: String = row.try_get(0)?;
    let key: String = row.try_get(1)?;
    let text: &str = row.try_get(2)?;
    let value = serde_json::from_str(text).map_err(|source| PostgresError::CorruptItem {
        namespace: prefix.clone(),
        key: key.clone(),
        source,
    })?;
    let expires_at: Option<i64> = row.try_get(5)?;
    let ttl: Option<i64> = row.try_get(6)?;
    Ok(Stored {
        item: Item {
            namespace: plan::split(&prefix),
            key,
            value,
            created_at: time(row.try_get(3)?),
            updated_at: time(row.try_get(4)?),
            expires_at: expires_at.map(time),
        },
        ttl: ttl.map(|t| Duration::from_nanos(u64::try_from(t).unwrap_or(0))),
        vectors: Vec::new(),
    })
}

pub(super) async fn get(
    tx: &Transaction<'_>,
    namespace: &[String],
    key: &str,
    now: SystemTime,
) -> Result<Option<Stored>, Failure> {
    let stmt = tx
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM stategraph_store_items
             WHERE prefix = $1 AND key = $2 AND (expires_at IS NULL OR expires_at > $3)"
        ))
        .await?;
    let row = tx
        .query_opt(&stmt, &[&namespace.join("."), &key, &nanos(now)])
        .await?;
    row.map(|row| read_item(&row)).transpose()
}

/// The condition on `column` (a namespace) for the items under `labels` (`[]`: every
/// item), and its parameters, numbered from `$first`.
pub(super) fn under(column: &str, labels: &[String], first: usize) -> (String, Vec<String>) {
    if labels.is_empty() {
        return ("TRUE".to_string(), Vec::new());
    }
    let exact = labels.join(".");
    let (low, high) = (format!("{exact}."), format!("{exact}/"));
    (
        format!(
            "({column} = ${first} OR ({column} >= ${} AND {column} < ${}))",
            first + 1,
            first + 2
        ),
        vec![exact, low, high],
    )
}

/// `now` then `texts`, as query parameters.
pub(super) fn params<'p>(now: &'p i64, texts: &'p [String]) -> Vec<&'p (dyn ToSql + Sync)> {
    let mut out: Vec<&(dyn ToSql + Sync)> = vec![now];
    out.extend(texts.iter().map(|t| t as &(dyn ToSql + Sync)));
    out
}
