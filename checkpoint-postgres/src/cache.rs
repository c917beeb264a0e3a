//! The node cache's entries, in `stategraph_cache`.

use deadpool_postgres::Client;
use stategraph::cache::{CacheEntry, CacheKey};

use crate::store::{Result, decode, encode};

fn cache_what(key: &CacheKey) -> String {
    format!(
        "cache entry of node `{}` on thread `{}`",
        key.node, key.thread_id
    )
}

pub(crate) async fn cache_get(
    client: &mut Client,
    limit: usize,
    key: &CacheKey,
) -> Result<Option<CacheEntry>> {
    let stmt = client
        .prepare_cached(
            "SELECT entry FROM stategraph_cache WHERE thread_id = $1 AND node = $2 AND input = $3",
        )
        .await?;
    let row = client
        .query_opt(&stmt, &[&key.thread_id, &key.node, &key.input])
        .await?;
    match row {
        Some(row) => Ok(Some(decode(&row, 0, limit, || cache_what(key))?)),
        None => Ok(None),
    }
}

pub(crate) async fn cache_put(
    client: &mut Client,
    limit: usize,
    key: &CacheKey,
    entry: &CacheEntry,
) -> Result<()> {
    let json = encode(entry, limit, || cache_what(key))?;
    let stmt = client
        .prepare_cached(
            "INSERT INTO stategraph_cache (thread_id, node, input, entry) VALUES ($1, $2, $3, $4)
             ON CONFLICT (thread_id, node, input) DO UPDATE SET entry = excluded.entry",
        )
        .await?;
    client
        .execute(&stmt, &[&key.thread_id, &key.node, &key.input, &json])
        .await?;
    Ok(())
}

pub(crate) async fn cache_clear(
    client: &mut Client,
    thread_id: &str,
    node: Option<&str>,
) -> Result<usize> {
    let removed = client
        .execute(
            "DELETE FROM stategraph_cache WHERE thread_id = $1 AND ($2::text IS NULL OR node = $2)",
            &[&thread_id, &node],
        )
        .await?;
    Ok(usize::try_from(removed).unwrap_or(usize::MAX))
}
