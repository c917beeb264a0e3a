//! [`Retention`] on SQLite.

use rusqlite::{OptionalExtension, params};
use stategraph::BoxFuture;

use super::SqliteDb;
use super::threads::delete_thread_rows;
use crate::db::{DbResult, Expired, Retention, Ttl, keeps_latest};

impl Retention for SqliteDb {
    fn set_thread_ttl(&self, thread_id: String, ttl: Option<Ttl>) -> BoxFuture<'_, DbResult<bool>> {
        self.call(move |conn| {
            let n = conn.execute(
                "UPDATE sg_threads SET ttl_ms = ?2, ttl_strategy = ?3, swept_at = NULL
                 WHERE thread_id = ?1",
                params![thread_id, ttl.map(|t| t.after_ms), ttl.map(Ttl::strategy)],
            )?;
            Ok(n > 0)
        })
    }

    fn thread_ttl(&self, thread_id: String) -> BoxFuture<'_, DbResult<Option<Ttl>>> {
        self.call(move |conn| {
            let row: Option<(Option<i64>, Option<String>)> = conn
                .query_row(
                    "SELECT ttl_ms, ttl_strategy FROM sg_threads WHERE thread_id = ?1",
                    [&thread_id],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()?;
            Ok(row.and_then(|(ms, strategy)| {
                ms.map(|after_ms| Ttl {
                    after_ms,
                    keep_latest: keeps_latest(strategy.as_deref()),
                })
            }))
        })
    }

    fn claim_expired(
        &self,
        now: i64,
        default: Option<Ttl>,
        hold_until: i64,
        limit: usize,
    ) -> BoxFuture<'_, DbResult<Vec<Expired>>> {
        self.call(move |conn| {
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let rows = {
                let mut stmt = tx.prepare(&format!(
                    "UPDATE sg_threads SET sweep_hold = ?3 WHERE thread_id IN (
                         SELECT thread_id FROM sg_threads
                         WHERE {} AND status <> 'busy'
                           AND (swept_at IS NULL OR swept_at < updated_at)
                           AND (sweep_hold IS NULL OR sweep_hold < ?1)
                         ORDER BY updated_at LIMIT ?4)
                     RETURNING thread_id, COALESCE(ttl_strategy, ?5), updated_at",
                    expired_filter(default.is_some())
                ))?;
                let limit = i64::try_from(limit).unwrap_or(i64::MAX);
                let rows = stmt.query_map(
                    params![
                        now,
                        default.map(|t| t.after_ms),
                        hold_until,
                        limit,
                        default.map(Ttl::strategy)
                    ],
                    |r| {
                        Ok(Expired {
                            thread_id: r.get(0)?,
                            keep_latest: keeps_latest(r.get::<_, Option<String>>(1)?.as_deref()),
                            updated_at: r.get(2)?,
                        })
                    },
                )?;
                rows.collect::<rusqlite::Result<Vec<_>>>()?
            };
            tx.commit()?;
            Ok(rows)
        })
    }

    fn delete_if_unchanged(
        &self,
        thread_id: String,
        updated_at: i64,
    ) -> BoxFuture<'_, DbResult<bool>> {
        self.call(move |conn| {
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let unchanged = tx
                .query_row(
                    "SELECT 1 FROM sg_threads WHERE thread_id = ?1 AND updated_at = ?2 AND status <> 'busy'",
                    params![thread_id, updated_at],
                    |_| Ok(()),
                )
                .optional()?
                .is_some();
            let deleted = unchanged && delete_thread_rows(&tx, &thread_id)?;
            tx.commit()?;
            Ok(deleted)
        })
    }

    fn mark_swept(&self, thread_id: String, updated_at: i64) -> BoxFuture<'_, DbResult<()>> {
        self.call(move |conn| {
            conn.execute(
                "UPDATE sg_threads SET swept_at = ?2, sweep_hold = NULL WHERE thread_id = ?1",
                params![thread_id, updated_at],
            )?;
            Ok(())
        })
    }
}

/// Which threads are expired at `?1`: with a default time to live (`?2`) any
/// thread may be; without one only threads with their own, which an index finds.
fn expired_filter(default: bool) -> &'static str {
    if default {
        "updated_at + COALESCE(ttl_ms, ?2) <= ?1"
    } else {
        "ttl_ms IS NOT NULL AND updated_at + ttl_ms <= ?1 AND ?2 IS NULL"
    }
}
