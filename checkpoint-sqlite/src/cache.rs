//! The node cache's entries, in `stategraph_cache`.

use rusqlite::Connection;
use stategraph::cache::{CacheEntry, CacheKey};

use crate::store::{Result, decode, encode};

fn cache_what(key: &CacheKey) -> String {
    format!(
        "cache entry of node `{}` on thread `{}`",
        key.node, key.thread_id
    )
}

pub(crate) fn cache_get(
    conn: &mut Connection,
    limit: usize,
    key: &CacheKey,
) -> Result<Option<CacheEntry>> {
    let mut stmt = conn.prepare_cached(
        "SELECT entry FROM stategraph_cache WHERE thread_id = ?1 AND node = ?2 AND input = ?3",
    )?;
    let mut rows = stmt.query((&key.thread_id, &key.node, &key.input))?;
    match rows.next()? {
        Some(row) => Ok(Some(decode(row, 0, limit, || cache_what(key))?)),
        None => Ok(None),
    }
}

pub(crate) fn cache_put(
    conn: &mut Connection,
    limit: usize,
    key: &CacheKey,
    entry: &CacheEntry,
) -> Result<()> {
    let json = encode(entry, limit, || cache_what(key))?;
    conn.prepare_cached(
        "INSERT INTO stategraph_cache (thread_id, node, input, entry) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (thread_id, node, input) DO UPDATE SET entry = excluded.entry",
    )?
    .execute((&key.thread_id, &key.node, &key.input, &json))?;
    Ok(())
}

pub(crate) fn cache_clear(
    conn: &mut Connection,
    thread_id: &str,
    node: Option<&str>,
) -> Result<usize> {
    Ok(conn.execute(
        "DELETE FROM stategraph_cache WHERE thread_id = ?1 AND (?2 IS NULL OR node = ?2)",
        (thread_id, node),
    )?)
}
