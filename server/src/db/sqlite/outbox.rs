//! [`Outbox`] on SQLite: a claim is one write transaction.

use rusqlite::params;
use stategraph::BoxFuture;

use super::SqliteDb;
use crate::db::{DbResult, DeliveryRow, Outbox, now_ms, parse_json};

impl Outbox for SqliteDb {
    fn claim_deliveries(
        &self,
        now: i64,
        until: i64,
        limit: usize,
    ) -> BoxFuture<'_, DbResult<Vec<DeliveryRow>>> {
        self.call(move |conn| {
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let rows = {
                let mut stmt = tx.prepare(
                    "UPDATE sg_webhooks SET attempts = attempts + 1, next_attempt_at = ?2
                     WHERE delivery_id IN (SELECT delivery_id FROM sg_webhooks
                         WHERE state = 'pending' AND next_attempt_at <= ?1
                         ORDER BY next_attempt_at LIMIT ?3)
                     RETURNING delivery_id, run_id, url, body, attempts",
                )?;
                let limit = i64::try_from(limit).unwrap_or(i64::MAX);
                let rows = stmt.query_map(params![now, until, limit], |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get::<_, String>(3)?,
                        r.get(4)?,
                    ))
                })?;
                rows.map(|r| {
                    let (delivery_id, run_id, url, body, attempt) = r?;
                    Ok(DeliveryRow {
                        delivery_id,
                        run_id,
                        url,
                        body: parse_json(&body, "webhook body")?,
                        attempt,
                    })
                })
                .collect::<DbResult<Vec<_>>>()?
            };
            tx.commit()?;
            Ok(rows)
        })
    }

    fn delivered(&self, delivery_id: String) -> BoxFuture<'_, DbResult<()>> {
        self.call(move |conn| {
            conn.execute(
                "UPDATE sg_webhooks SET state = 'delivered', ended_at = ?2, last_error = NULL
                 WHERE delivery_id = ?1",
                params![delivery_id, now_ms()],
            )?;
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
        self.call(move |conn| {
            conn.execute(
                "UPDATE sg_webhooks SET last_error = ?3,
                     state = CASE WHEN ?4 IS NULL THEN 'failed' ELSE 'pending' END,
                     next_attempt_at = COALESCE(?4, next_attempt_at),
                     ended_at = CASE WHEN ?4 IS NULL THEN ?5 ELSE NULL END
                 WHERE delivery_id = ?1 AND attempts = ?2 AND state = 'pending'",
                params![delivery_id, attempt, error, retry_at, now_ms()],
            )?;
            Ok(())
        })
    }

    fn next_delivery(&self) -> BoxFuture<'_, DbResult<Option<i64>>> {
        self.call(move |conn| {
            Ok(conn.query_row(
                "SELECT MIN(next_attempt_at) FROM sg_webhooks WHERE state = 'pending'",
                [],
                |r| r.get(0),
            )?)
        })
    }
}
