//! [`Retention`] on PostgreSQL: sweepers of several processes claim disjoint
//! batches (`FOR UPDATE SKIP LOCKED`).

use stategraph::BoxFuture;

use super::threads::{delete_thread_rows, get_thread};
use super::{PgDb, pg};
use crate::db::{DbResult, Expired, Retention, ThreadStatus, Ttl, keeps_latest};

impl Retention for PgDb {
    fn set_thread_ttl(&self, thread_id: String, ttl: Option<Ttl>) -> BoxFuture<'_, DbResult<bool>> {
        Box::pin(async move {
            let client = self.client().await?;
            let n = client
                .execute(
                    "UPDATE sg_threads SET ttl_ms = $2, ttl_strategy = $3, swept_at = NULL
                     WHERE thread_id = $1",
                    &[
                        &thread_id,
                        &ttl.map(|t| t.after_ms),
                        &ttl.map(Ttl::strategy),
                    ],
                )
                .await?;
            Ok(n > 0)
        })
    }

    fn thread_ttl(&self, thread_id: String) -> BoxFuture<'_, DbResult<Option<Ttl>>> {
        Box::pin(async move {
            let client = self.client().await?;
            let row = pg(&client)
                .query_opt(
                    "SELECT ttl_ms, ttl_strategy FROM sg_threads WHERE thread_id = $1",
                    &[&thread_id],
                )
                .await?;
            let Some(row) = row else {
                return Ok(None);
            };
            let ms: Option<i64> = row.try_get(0)?;
            let strategy: Option<String> = row.try_get(1)?;
            Ok(ms.map(|after_ms| Ttl {
                after_ms,
                keep_latest: keeps_latest(strategy.as_deref()),
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
        Box::pin(async move {
            let client = self.client().await?;
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let rows = client
                .query(
                    &format!(
                        "UPDATE sg_threads SET sweep_hold = $3 WHERE thread_id IN (
                         SELECT thread_id FROM sg_threads
                         WHERE {} AND status <> 'busy'
                           AND (swept_at IS NULL OR swept_at < updated_at)
                           AND (sweep_hold IS NULL OR sweep_hold < $1)
                         ORDER BY updated_at LIMIT $4
                         FOR UPDATE SKIP LOCKED)
                     RETURNING thread_id, COALESCE(ttl_strategy, $5::text), updated_at",
                        expired_filter(default.is_some())
                    ),
                    &[
                        &now,
                        &default.map(|t| t.after_ms),
                        &hold_until,
                        &limit,
                        &default.map(Ttl::strategy),
                    ],
                )
                .await?;
            rows.iter()
                .map(|r| {
                    let strategy: Option<String> = r.try_get(1)?;
                    Ok(Expired {
                        thread_id: r.try_get(0)?,
                        keep_latest: keeps_latest(strategy.as_deref()),
                        updated_at: r.try_get(2)?,
                    })
                })
                .collect()
        })
    }

    fn delete_if_unchanged(
        &self,
        thread_id: String,
        updated_at: i64,
    ) -> BoxFuture<'_, DbResult<bool>> {
        Box::pin(async move {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            let unchanged = get_thread(&*tx, &thread_id, true)
                .await?
                .is_some_and(|t| t.updated_at == updated_at && t.status != ThreadStatus::Busy);
            if unchanged {
                delete_thread_rows(&*tx, &thread_id).await?;
            }
            tx.commit().await?;
            Ok(unchanged)
        })
    }

    fn mark_swept(&self, thread_id: String, updated_at: i64) -> BoxFuture<'_, DbResult<()>> {
        Box::pin(async move {
            let client = self.client().await?;
            client
                .execute(
                    "UPDATE sg_threads SET swept_at = $2, sweep_hold = NULL WHERE thread_id = $1",
                    &[&thread_id, &updated_at],
                )
                .await?;
            Ok(())
        })
    }
}

/// Which threads are expired at `$1`: with a default time to live (`$2`) any
/// thread may be; without one only threads with their own, which an index finds.
fn expired_filter(default: bool) -> &'static str {
    if default {
        "updated_at + COALESCE(ttl_ms, $2::bigint) <= $1"
    } else {
        "ttl_ms IS NOT NULL AND updated_at + ttl_ms <= $1 AND $2::bigint IS NULL"
    }
}
