//! Reading the store's item rows: the columns, times as nanoseconds, an item
//! from its row, one item by its address, and the namespace-prefix condition —
//! what both the batch operations and the searches use.

use std::path::Path;
use std::time::{Duration, SystemTime};

use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, Row};
use stategraph::store::Item;

use crate::error::{Failure, SqliteError};
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
pub(super) fn read_item(row: &Row<'_>, path: &Path) -> Result<Stored, Failure> {
    let prefix: String = row.get(0)?;
    let key: String = row.get(1)?;
    let text: String = row.get(2)?;
    let value = serde_json::from_str(&text).map_err(|source| SqliteError::CorruptItem {
        path: path.to_path_buf(),
        namespace: prefix.clone(),
        key: key.clone(),
        source,
    })?;
    let expires_at: Option<i64> = row.get(5)?;
    let ttl: Option<i64> = row.get(6)?;
    Ok(Stored {
        item: Item {
            namespace: plan::split(&prefix),
            key,
            value,
            created_at: time(row.get(3)?),
            updated_at: time(row.get(4)?),
            expires_at: expires_at.map(time),
        },
        ttl: ttl.map(|t| Duration::from_nanos(u64::try_from(t).unwrap_or(0))),
        vectors: Vec::new(),
    })
}

pub(super) fn get(
    tx: &Connection,
    path: &Path,
    namespace: &[String],
    key: &str,
    now: SystemTime,
) -> Result<Option<Stored>, Failure> {
    let mut stmt = tx.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM stategraph_store_items
         WHERE prefix = ?1 AND key = ?2 AND (expires_at IS NULL OR expires_at > ?3)"
    ))?;
    let mut rows = stmt.query((namespace.join("."), key, nanos(now)))?;
    match rows.next()? {
        Some(row) => Ok(Some(read_item(row, path)?)),
        None => Ok(None),
    }
}

/// The condition on `column` (a namespace) for the items under `labels` (`[]`: every
/// item), and its parameters, numbered from `?first`.
pub(super) fn under(column: &str, labels: &[String], first: usize) -> (String, Vec<SqlValue>) {
    if labels.is_empty() {
        return ("1".to_string(), Vec::new());
    }
    let exact = labels.join(".");
    let (low, high) = (format!("{exact}."), format!("{exact}/"));
    (
        format!(
            "({column} = ?{first} OR ({column} >= ?{} AND {column} < ?{}))",
            first + 1,
            first + 2
        ),
        vec![exact.into(), low.into(), high.into()],
    )
}
