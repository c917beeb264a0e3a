//! [`Crons`] on PostgreSQL: a firing's claim is an `UPDATE … WHERE next_run_at =
//! <the tick read>` in the transaction that inserts its run; a process that fires the
//! same tick at the same time waits on the row lock, then finds the tick moved on and
//! updates nothing.

use serde_json::Value;
use stategraph::BoxFuture;
use tokio_postgres::{GenericClient, Row};

use super::queue::insert_run;
use super::{PgDb, object, pg};
use crate::db::{CronQuery, CronRow, Crons, DbResult, Fired, Firing, now_ms, order_crons};

const CRON_COLUMNS: &str = "cron_id, assistant_id, thread_id, schedule, timezone, end_time, \
     enabled, on_run_completed, payload, metadata, next_run_at, created_at, updated_at";

fn cron_row(row: &Row) -> DbResult<CronRow> {
    Ok(CronRow {
        cron_id: row.try_get(0)?,
        assistant_id: row.try_get(1)?,
        thread_id: row.try_get(2)?,
        schedule: row.try_get(3)?,
        timezone: row.try_get(4)?,
        end_time: row.try_get(5)?,
        enabled: row.try_get(6)?,
        on_run_completed: row.try_get(7)?,
        payload: object(row.try_get(8)?),
        metadata: object(row.try_get(9)?),
        next_run_at: row.try_get(10)?,
        created_at: row.try_get(11)?,
        updated_at: row.try_get(12)?,
    })
}

async fn get_cron(c: &impl GenericClient, cron_id: &str) -> DbResult<Option<CronRow>> {
    c.query_opt(
        &format!("SELECT {CRON_COLUMNS} FROM sg_crons WHERE cron_id = $1"),
        &[&cron_id],
    )
    .await?
    .as_ref()
    .map(cron_row)
    .transpose()
}

/// Every cron matching `query`'s filters (crons are few: sorted and paged here).
async fn matching(c: &impl GenericClient, query: &CronQuery) -> DbResult<Vec<CronRow>> {
    let rows = c
        .query(
            &format!(
                "SELECT {CRON_COLUMNS} FROM sg_crons
                 WHERE ($1::text IS NULL OR assistant_id = $1)
                   AND ($2::text IS NULL OR thread_id = $2)
                   AND ($3::bool IS NULL OR enabled = $3)
                   AND metadata @> $4"
            ),
            &[
                &query.assistant_id,
                &query.thread_id,
                &query.enabled,
                &Value::Object(query.metadata.clone()),
            ],
        )
        .await?;
    rows.iter().map(cron_row).collect()
}

impl Crons for PgDb {
    fn insert_cron(&self, cron: CronRow) -> BoxFuture<'_, DbResult<CronRow>> {
        Box::pin(async move {
            let client = self.client().await?;
            let row = client
                .query_one(
                    &format!(
                        "INSERT INTO sg_crons ({CRON_COLUMNS})
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12)
                         RETURNING {CRON_COLUMNS}"
                    ),
                    &[
                        &cron.cron_id,
                        &cron.assistant_id,
                        &cron.thread_id,
                        &cron.schedule,
                        &cron.timezone,
                        &cron.end_time,
                        &cron.enabled,
                        &cron.on_run_completed,
                        &Value::Object(cron.payload.clone()),
                        &Value::Object(cron.metadata.clone()),
                        &cron.next_run_at,
                        &now_ms(),
                    ],
                )
                .await?;
            cron_row(&row)
        })
    }

    fn get_cron(&self, cron_id: String) -> BoxFuture<'_, DbResult<Option<CronRow>>> {
        Box::pin(async move {
            let client = self.client().await?;
            get_cron(pg(&client), &cron_id).await
        })
    }

    fn update_cron(
        &self,
        cron: CronRow,
        reschedule: bool,
    ) -> BoxFuture<'_, DbResult<Option<CronRow>>> {
        Box::pin(async move {
            let client = self.client().await?;
            let row = client
                .query_opt(
                    &format!(
                        "UPDATE sg_crons SET schedule = $2, timezone = $3, end_time = $4, enabled = $5,
                             on_run_completed = $6, payload = $7, metadata = $8,
                             next_run_at = CASE WHEN $9 THEN $10 ELSE next_run_at END, updated_at = $11
                         WHERE cron_id = $1
                         RETURNING {CRON_COLUMNS}"
                    ),
                    &[
                        &cron.cron_id,
                        &cron.schedule,
                        &cron.timezone,
                        &cron.end_time,
                        &cron.enabled,
                        &cron.on_run_completed,
                        &Value::Object(cron.payload.clone()),
                        &Value::Object(cron.metadata.clone()),
                        &reschedule,
                        &cron.next_run_at,
                        &now_ms(),
                    ],
                )
                .await?;
            row.as_ref().map(cron_row).transpose()
        })
    }

    fn delete_cron(&self, cron_id: String) -> BoxFuture<'_, DbResult<bool>> {
        Box::pin(async move {
            let client = self.client().await?;
            let n = client
                .execute("DELETE FROM sg_crons WHERE cron_id = $1", &[&cron_id])
                .await?;
            Ok(n > 0)
        })
    }

    fn search_crons(&self, query: CronQuery) -> BoxFuture<'_, DbResult<Vec<CronRow>>> {
        Box::pin(async move {
            let client = self.client().await?;
            Ok(order_crons(matching(pg(&client), &query).await?, &query))
        })
    }

    fn count_crons(&self, query: CronQuery) -> BoxFuture<'_, DbResult<u64>> {
        Box::pin(async move {
            let client = self.client().await?;
            let n = matching(pg(&client), &query).await?.len();
            Ok(u64::try_from(n).unwrap_or(u64::MAX))
        })
    }

    fn due_crons(&self, now: i64, limit: usize) -> BoxFuture<'_, DbResult<Vec<CronRow>>> {
        Box::pin(async move {
            let client = self.client().await?;
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let rows = client
                .query(
                    &format!(
                        "SELECT {CRON_COLUMNS} FROM sg_crons
                         WHERE enabled AND next_run_at <= $1 ORDER BY next_run_at LIMIT $2"
                    ),
                    &[&now, &limit],
                )
                .await?;
            rows.iter().map(cron_row).collect()
        })
    }

    fn next_cron_tick(&self) -> BoxFuture<'_, DbResult<Option<i64>>> {
        Box::pin(async move {
            let client = self.client().await?;
            let row = client
                .query_one("SELECT MIN(next_run_at) FROM sg_crons WHERE enabled", &[])
                .await?;
            Ok(row.try_get(0)?)
        })
    }

    fn fire_cron(&self, firing: Firing) -> BoxFuture<'_, DbResult<Fired>> {
        Box::pin(async move {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            let claimed = tx
                .execute(
                    "UPDATE sg_crons SET next_run_at = $3
                     WHERE cron_id = $1 AND next_run_at = $2 AND enabled",
                    &[&firing.cron_id, &firing.due, &firing.next],
                )
                .await?;
            if claimed == 0 {
                return Ok(Fired::Taken);
            }
            let run = match &firing.run {
                Some(r) => Some(Box::new(insert_run(&*tx, r).await?)),
                None => None,
            };
            tx.commit().await?;
            Ok(Fired::Claimed(run))
        })
    }
}
