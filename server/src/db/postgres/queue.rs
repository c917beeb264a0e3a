//! [`Queue`] on PostgreSQL: several processes claim from one table, each claim
//! `FOR UPDATE SKIP LOCKED` (a run another worker is claiming is passed over, not
//! waited for), and every transaction that changes a thread's runs locks the
//! thread's row first.

use std::time::Duration;

use serde_json::Value;
use stategraph::BoxFuture;
use tokio_postgres::GenericClient;

use super::threads::{get_thread, has_active_run, insert_thread};
use super::{EVENTS_LOCK_CLASS, NOW_MS, PgDb, RUN_COLUMNS, millis, pg, run_row};
use crate::db::{
    BeforeQueue, Claim, DbError, DbResult, EventRow, Finish, Lease, NewRun, Queue, RunRow,
    RunStatus, ThreadStatus, busy,
};

/// The run, if stored; with `lock`, its row stays locked until the transaction ends.
async fn get_run(c: &impl GenericClient, run_id: &str, lock: bool) -> DbResult<Option<RunRow>> {
    let sql = format!(
        "SELECT {RUN_COLUMNS} FROM sg_runs WHERE run_id = $1{}",
        if lock { " FOR UPDATE" } else { "" }
    );
    c.query_opt(&sql, &[&run_id])
        .await?
        .as_ref()
        .map(run_row)
        .transpose()
}

/// Asks the thread's active runs to stop: pending ones end (or go, for a rollback)
/// at once; running ones are flagged for their worker.
async fn stop_active(c: &impl GenericClient, thread_id: &str, action: &str) -> DbResult<()> {
    if action == "rollback" {
        c.execute(
            "DELETE FROM sg_runs WHERE thread_id = $1 AND status = 'pending'",
            &[&thread_id],
        )
        .await?;
    } else {
        c.execute(
            &format!(
                "UPDATE sg_runs SET status = 'interrupted', updated_at = {NOW_MS}, ended_at = {NOW_MS}
                 WHERE thread_id = $1 AND status = 'pending'"
            ),
            &[&thread_id],
        )
        .await?;
    }
    c.execute(
        &format!(
            "UPDATE sg_runs SET cancel = $2, updated_at = {NOW_MS} WHERE thread_id = $1 AND status = 'running'"
        ),
        &[&thread_id, &action],
    )
    .await?;
    Ok(())
}

/// The thread of a run `claim` holds, with the thread's row and then the run's
/// locked; `None` when the claim does not hold it (any more).
async fn lock_held(c: &impl GenericClient, claim: &Claim) -> DbResult<Option<String>> {
    const HELD: &str = "SELECT thread_id FROM sg_runs
         WHERE run_id = $1 AND worker = $2 AND attempt = $3 AND status = 'running'";
    let key: [&(dyn tokio_postgres::types::ToSql + Sync); 3] =
        [&claim.run_id, &claim.worker, &claim.attempt];
    let Some(row) = c.query_opt(HELD, &key).await? else {
        return Ok(None);
    };
    let thread_id: String = row.try_get(0)?;
    get_thread(c, &thread_id, true).await?;
    let still = c.query_opt(&format!("{HELD} FOR UPDATE"), &key).await?;
    Ok(still.map(|_| thread_id))
}

/// Queues `run` in the caller's transaction (see [`Queue::insert_run`]).
pub(super) async fn insert_run(tx: &impl GenericClient, run: &NewRun) -> DbResult<RunRow> {
    let r = &run.row;
    if run.create_thread {
        insert_thread(tx, &r.thread_id, &run.thread_metadata).await?;
    }
    // The thread's row lock makes the strategy's check and the insert one step for
    // every process.
    if get_thread(tx, &r.thread_id, true).await?.is_none() {
        return Err(DbError::Conflict(format!(
            "thread {} not found",
            r.thread_id
        )));
    }
    match BeforeQueue::of(&r.multitask_strategy) {
        BeforeQueue::RejectIfBusy if has_active_run(tx, &r.thread_id).await? => {
            return Err(busy(&r.thread_id));
        }
        BeforeQueue::StopActive(action) => stop_active(tx, &r.thread_id, action).await?,
        _ => {}
    }
    let delay = run.delay.map(millis);
    let row = tx
        .query_one(
            &format!(
                "INSERT INTO sg_runs (run_id, thread_id, assistant_id, created_at, updated_at, status,
                     metadata, multitask_strategy, kwargs, run_after)
                 VALUES ($1, $2, $3, {NOW_MS}, {NOW_MS}, 'pending', $4, $5, $6,
                     {NOW_MS} + ($7::float8)::bigint)
                 RETURNING {RUN_COLUMNS}"
            ),
            &[
                &r.run_id,
                &r.thread_id,
                &r.assistant_id,
                &Value::Object(r.metadata.clone()),
                &r.multitask_strategy,
                &r.kwargs,
                &delay,
            ],
        )
        .await?;
    let row = run_row(&row)?;
    // Busy, and — a thread created without one — bound to the run's graph, in the
    // run's own transaction: no crash leaves a run without its graph.
    tx.execute(
        &format!(
            "UPDATE sg_threads SET status = 'busy', updated_at = {NOW_MS},
                 metadata = CASE WHEN metadata ? 'graph_id' THEN metadata ELSE metadata || $2 END
             WHERE thread_id = $1"
        ),
        &[&r.thread_id, &Value::Object(run.thread_metadata.clone())],
    )
    .await?;
    Ok(row)
}

impl Queue for PgDb {
    fn insert_run(&self, run: NewRun) -> BoxFuture<'_, DbResult<RunRow>> {
        Box::pin(async move {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            let row = insert_run(&*tx, &run).await?;
            tx.commit().await?;
            Ok(row)
        })
    }

    fn get_run(
        &self,
        thread_id: Option<String>,
        run_id: String,
    ) -> BoxFuture<'_, DbResult<Option<RunRow>>> {
        Box::pin(async move {
            let client = self.client().await?;
            Ok(get_run(pg(&client), &run_id, false)
                .await?
                .filter(|r| thread_id.as_ref().is_none_or(|t| *t == r.thread_id)))
        })
    }

    fn list_runs(
        &self,
        thread_id: String,
        status: Option<RunStatus>,
        limit: usize,
        offset: usize,
    ) -> BoxFuture<'_, DbResult<Vec<RunRow>>> {
        Box::pin(async move {
            let client = self.client().await?;
            let rows = client
                .query(
                    &format!(
                        "SELECT {RUN_COLUMNS} FROM sg_runs WHERE thread_id = $1 AND ($2::text IS NULL OR status = $2)
                         ORDER BY seq DESC LIMIT $3 OFFSET $4"
                    ),
                    &[
                        &thread_id,
                        &status.map(RunStatus::as_str),
                        &i64::try_from(limit).unwrap_or(i64::MAX),
                        &i64::try_from(offset).unwrap_or(i64::MAX),
                    ],
                )
                .await?;
            rows.iter().map(run_row).collect()
        })
    }

    fn cancel_run(
        &self,
        thread_id: String,
        run_id: String,
        action: String,
    ) -> BoxFuture<'_, DbResult<Option<RunRow>>> {
        Box::pin(async move {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            if get_thread(&*tx, &thread_id, true).await?.is_none() {
                return Ok(None);
            }
            let Some(run) = get_run(&*tx, &run_id, true)
                .await?
                .filter(|r| r.thread_id == thread_id)
            else {
                return Ok(None);
            };
            match run.status {
                RunStatus::Pending if action == "rollback" => {
                    tx.execute("DELETE FROM sg_runs WHERE run_id = $1", &[&run_id])
                        .await?;
                }
                RunStatus::Pending => {
                    tx.execute(
                        &format!(
                            "UPDATE sg_runs SET status = 'interrupted', updated_at = {NOW_MS}, ended_at = {NOW_MS}
                             WHERE run_id = $1"
                        ),
                        &[&run_id],
                    )
                    .await?;
                }
                RunStatus::Running => {
                    tx.execute(
                        &format!(
                            "UPDATE sg_runs SET cancel = $2, updated_at = {NOW_MS} WHERE run_id = $1"
                        ),
                        &[&run_id, &action],
                    )
                    .await?;
                }
                _ => {}
            }
            if run.status == RunStatus::Pending && !has_active_run(&*tx, &thread_id).await? {
                tx.execute(
                    "UPDATE sg_threads SET status = CASE WHEN interrupts NOT IN ('[]'::jsonb, '{}'::jsonb)
                         THEN 'interrupted' ELSE 'idle' END
                     WHERE thread_id = $1 AND status = 'busy'",
                    &[&thread_id],
                )
                .await?;
            }
            let row = get_run(&*tx, &run_id, false).await?;
            tx.commit().await?;
            Ok(row.or(Some(run)))
        })
    }

    fn delete_run(&self, thread_id: String, run_id: String) -> BoxFuture<'_, DbResult<bool>> {
        Box::pin(async move {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            let Some(run) = get_run(&*tx, &run_id, true)
                .await?
                .filter(|r| r.thread_id == thread_id)
            else {
                return Ok(false);
            };
            if !run.status.is_final() {
                return Err(DbError::Conflict(format!(
                    "run {run_id} is {}: cancel it before deleting it",
                    run.status.as_str()
                )));
            }
            tx.execute("DELETE FROM sg_run_events WHERE run_id = $1", &[&run_id])
                .await?;
            tx.execute("DELETE FROM sg_runs WHERE run_id = $1", &[&run_id])
                .await?;
            tx.commit().await?;
            Ok(true)
        })
    }

    fn claim_run(
        &self,
        worker: String,
        lease: Duration,
    ) -> BoxFuture<'_, DbResult<Option<RunRow>>> {
        Box::pin(async move {
            let client = self.client().await?;
            // One statement: the oldest runnable run not being claimed by another
            // worker right now (SKIP LOCKED), re-checked after its lock is taken.
            let row = client
                .query_opt(
                    &format!(
                        "WITH c AS (
                             SELECT r.seq FROM sg_runs r
                             WHERE ((r.status = 'pending' AND (r.run_after IS NULL OR r.run_after <= {NOW_MS}))
                                    OR (r.status = 'running' AND r.lease_until < now()))
                               AND NOT EXISTS (SELECT 1 FROM sg_runs o WHERE o.thread_id = r.thread_id
                                   AND o.seq <> r.seq AND o.status = 'running' AND o.lease_until >= now())
                               AND NOT EXISTS (SELECT 1 FROM sg_runs o WHERE o.thread_id = r.thread_id
                                   AND o.seq < r.seq AND o.status IN ('pending', 'running'))
                             ORDER BY r.seq LIMIT 1
                             FOR UPDATE SKIP LOCKED)
                         UPDATE sg_runs SET status = 'running', worker = $1,
                             lease_until = now() + $2 * interval '1 millisecond',
                             attempt = attempt + 1, updated_at = {NOW_MS}
                         FROM c WHERE sg_runs.seq = c.seq
                         RETURNING {}",
                        RUN_COLUMNS
                            .split(", ")
                            .map(|c| format!("sg_runs.{c}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    &[&worker, &millis(lease)],
                )
                .await?;
            row.as_ref().map(run_row).transpose()
        })
    }

    fn renew_lease(&self, claim: Claim, lease: Duration) -> BoxFuture<'_, DbResult<Lease>> {
        Box::pin(async move {
            let client = self.client().await?;
            let row = client
                .query_opt(
                    "UPDATE sg_runs SET lease_until = now() + $4 * interval '1 millisecond'
                     WHERE run_id = $1 AND worker = $2 AND attempt = $3 AND status = 'running'
                     RETURNING cancel",
                    &[&claim.run_id, &claim.worker, &claim.attempt, &millis(lease)],
                )
                .await?;
            Ok(match row {
                Some(row) => Lease::Held {
                    cancel: row.try_get(0)?,
                },
                None => Lease::Lost,
            })
        })
    }

    fn release_run(&self, claim: Claim) -> BoxFuture<'_, DbResult<()>> {
        Box::pin(async move {
            let client = self.client().await?;
            client
                .execute(
                    "UPDATE sg_runs SET status = 'pending', worker = NULL, lease_until = NULL
                     WHERE run_id = $1 AND worker = $2 AND attempt = $3 AND status = 'running'",
                    &[&claim.run_id, &claim.worker, &claim.attempt],
                )
                .await?;
            Ok(())
        })
    }

    fn requeue_own(&self, prefix: String) -> BoxFuture<'_, DbResult<u64>> {
        Box::pin(async move {
            let client = self.client().await?;
            let names = format!("{prefix}/");
            let n = client
                .execute(
                    "UPDATE sg_runs SET status = 'pending', worker = NULL, lease_until = NULL
                     WHERE status = 'running' AND starts_with(worker, $1)",
                    &[&names],
                )
                .await?;
            Ok(n)
        })
    }

    fn finish_run(&self, claim: Claim, finish: Finish) -> BoxFuture<'_, DbResult<bool>> {
        Box::pin(async move {
            let run_id = &claim.run_id;
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            let Some(thread_id) = lock_held(&*tx, &claim).await? else {
                return Ok(false);
            };
            if finish.delete_run {
                tx.execute("DELETE FROM sg_runs WHERE run_id = $1", &[&run_id])
                    .await?;
            } else {
                tx.execute(
                    &format!(
                        "UPDATE sg_runs SET status = $2, output = $3, updated_at = {NOW_MS}, ended_at = {NOW_MS},
                             worker = NULL, lease_until = NULL WHERE run_id = $1"
                    ),
                    &[&run_id, &finish.status.as_str(), &finish.output],
                )
                .await?;
            }
            if let Some(hook) = &finish.webhook {
                tx.execute(
                    &format!(
                        "INSERT INTO sg_webhooks (delivery_id, run_id, url, body, state, next_attempt_at, created_at)
                         VALUES ($1, $2, $3, $4, 'pending', {NOW_MS}, {NOW_MS})"
                    ),
                    &[&uuid::Uuid::new_v4().to_string(), &run_id, &hook.url, &hook.body],
                )
                .await?;
            }
            let status = if has_active_run(&*tx, &thread_id).await? {
                ThreadStatus::Busy
            } else {
                finish.thread_status
            };
            match &finish.values {
                Some(values) => {
                    tx.execute(
                        &format!(
                            "UPDATE sg_threads SET status = $2, state_values = $3, interrupts = $4,
                                 updated_at = {NOW_MS} WHERE thread_id = $1"
                        ),
                        &[&thread_id, &status.as_str(), values, &finish.interrupts],
                    )
                    .await?
                }
                None => {
                    tx.execute(
                        &format!(
                            "UPDATE sg_threads SET status = $2, updated_at = {NOW_MS} WHERE thread_id = $1"
                        ),
                        &[&thread_id, &status.as_str()],
                    )
                    .await?
                }
            };
            tx.commit().await?;
            Ok(true)
        })
    }

    fn append_events(
        &self,
        run_id: String,
        events: Vec<(String, Value)>,
    ) -> BoxFuture<'_, DbResult<i64>> {
        Box::pin(async move {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            // A run has one writer, its worker — but a worker that lost its lease may
            // still be writing its last events: the lock keeps their numbers apart.
            tx.execute(
                "SELECT pg_advisory_xact_lock($1, hashtext($2))",
                &[&EVENTS_LOCK_CLASS, &run_id],
            )
            .await?;
            let last: i64 = tx
                .query_one(
                    "SELECT COALESCE(MAX(seq), 0) FROM sg_run_events WHERE run_id = $1",
                    &[&run_id],
                )
                .await?
                .try_get(0)?;
            let (names, data): (Vec<String>, Vec<Value>) = events.into_iter().unzip();
            let n = i64::try_from(names.len()).unwrap_or(i64::MAX);
            tx.execute(
                "INSERT INTO sg_run_events (run_id, seq, event, data)
                 SELECT $1, $2 + t.ord, t.event, t.data
                 FROM unnest($3::text[], $4::jsonb[]) WITH ORDINALITY AS t(event, data, ord)",
                &[&run_id, &last, &names, &data],
            )
            .await?;
            tx.commit().await?;
            Ok(last + n)
        })
    }

    fn last_event_seq(&self, run_id: String) -> BoxFuture<'_, DbResult<i64>> {
        Box::pin(async move {
            let client = self.client().await?;
            let row = client
                .query_one(
                    "SELECT COALESCE(MAX(seq), 0) FROM sg_run_events WHERE run_id = $1",
                    &[&run_id],
                )
                .await?;
            Ok(row.try_get(0)?)
        })
    }

    fn events_after(
        &self,
        run_id: String,
        after: i64,
        limit: usize,
    ) -> BoxFuture<'_, DbResult<Vec<EventRow>>> {
        Box::pin(async move {
            let client = self.client().await?;
            let rows = client
                .query(
                    "SELECT seq, event, data FROM sg_run_events WHERE run_id = $1 AND seq > $2
                     ORDER BY seq LIMIT $3",
                    &[&run_id, &after, &i64::try_from(limit).unwrap_or(i64::MAX)],
                )
                .await?;
            rows.iter()
                .map(|row| {
                    Ok(EventRow {
                        seq: row.try_get(0)?,
                        event: row.try_get(1)?,
                        data: row.try_get(2)?,
                    })
                })
                .collect()
        })
    }

    fn sweep_events(&self, age: Duration) -> BoxFuture<'_, DbResult<u64>> {
        Box::pin(async move {
            let client = self.client().await?;
            let age = i64::try_from(age.as_millis()).unwrap_or(i64::MAX);
            let n = client
                .execute(
                    &format!(
                        "DELETE FROM sg_run_events e USING sg_runs r
                         WHERE e.run_id = r.run_id AND r.ended_at IS NOT NULL AND r.ended_at < {NOW_MS} - $1"
                    ),
                    &[&age],
                )
                .await?;
            Ok(n)
        })
    }
}
