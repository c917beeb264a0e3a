//! [`Outbox`] on PostgreSQL: a claim skips deliveries another process is claiming
//! (`FOR UPDATE SKIP LOCKED`).

use stategraph::BoxFuture;

use super::PgDb;
use crate::db::{DbResult, DeliveryRow, Outbox, now_ms};

impl Outbox for PgDb {
    fn claim_deliveries(
        &self,
        now: i64,
        until: i64,
        limit: usize,
    ) -> BoxFuture<'_, DbResult<Vec<DeliveryRow>>> {
        Box::pin(async move {
            let client = self.client().await?;
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let rows = client
                .query(
                    "UPDATE sg_webhooks SET attempts = attempts + 1, next_attempt_at = $2
                     WHERE delivery_id IN (SELECT delivery_id FROM sg_webhooks
                         WHERE state = 'pending' AND next_attempt_at <= $1
                         ORDER BY next_attempt_at LIMIT $3 FOR UPDATE SKIP LOCKED)
                     RETURNING delivery_id, run_id, url, body, attempts",
                    &[&now, &until, &limit],
                )
                .await?;
            rows.iter()
                .map(|r| {
                    Ok(DeliveryRow {
                        delivery_id: r.try_get(0)?,
                        run_id: r.try_get(1)?,
                        url: r.try_get(2)?,
                        body: r.try_get(3)?,
                        attempt: r.try_get(4)?,
                    })
                })
                .collect()
        })
    }

    fn delivered(&self, delivery_id: String) -> BoxFuture<'_, DbResult<()>> {
        Box::pin(async move {
            let client = self.client().await?;
            client
                .execute(
                    "UPDATE sg_webhooks SET state = 'delivered', ended_at = $2, last_error = NULL
                     WHERE delivery_id = $1",
                    &[&delivery_id, &now_ms()],
                )
                .await?;
            Ok(())
        })
    }

    fn attempt_failed(
        &self,
        delivery_id: String,
        attempt: i32,
        retry_at: Option<i64>,
        error: String,
    ) -> BoxFuture<'_, DbResult<()>> {
        Box::pin(async move {
            let client = self.client().await?;
            client
                .execute(
                    "UPDATE sg_webhooks SET last_error = $3,
                         state = CASE WHEN $4::bigint IS NULL THEN 'failed' ELSE 'pending' END,
                         next_attempt_at = COALESCE($4, next_attempt_at),
                         ended_at = CASE WHEN $4::bigint IS NULL THEN $5 ELSE NULL END
                     WHERE delivery_id = $1 AND attempts = $2 AND state = 'pending'",
                    &[&delivery_id, &attempt, &error, &retry_at, &now_ms()],
                )
                .await?;
            Ok(())
        })
    }

    fn next_delivery(&self) -> BoxFuture<'_, DbResult<Option<i64>>> {
        Box::pin(async move {
            let client = self.client().await?;
            let row = client
                .query_one(
                    "SELECT MIN(next_attempt_at) FROM sg_webhooks WHERE state = 'pending'",
                    &[],
                )
                .await?;
            Ok(row.try_get(0)?)
        })
    }
}
