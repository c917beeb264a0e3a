//! [`Queue`] on SQLite: one process, so a write transaction (`BEGIN IMMEDIATE`) is
//! the claim's lock.

use std::time::Duration;

use rusqlite::{OptionalExtension, params};
use serde_json::Value;
use stategraph::BoxFuture;

use super::{
    RUN_COLUMNS, SqliteDb, finish_run_row, get_run, get_thread, has_active_run, insert_thread,
    run_row, stop_active,
};
use crate::db::{
    BeforeQueue, Claim, DbError, DbResult, EventRow, Finish, Lease, NewRun, Queue, RunRow,
    RunStatus, ThreadStatus, busy, now_ms, parse_json,
};

impl Queue for SqliteDb {
    fn insert_run(&self, run: NewRun) -> BoxFuture<'_, DbResult<RunRow>> {
        self.call(move |conn| {
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let row = insert_run(&tx, &run)?;
            tx.commit()?;
            Ok(row)
        })
    }

    fn get_run(
        &self,
        thread_id: Option<String>,
        run_id: String,
    ) -> BoxFuture<'_, DbResult<Option<RunRow>>> {
        self.call(move |conn| {
            Ok(get_run(conn, &run_id)?
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
        self.call(move |conn| {
            let mut stmt = conn.prepare(&format!(
                "SELECT {RUN_COLUMNS} FROM sg_runs WHERE thread_id = ?1 AND (?2 IS NULL OR status = ?2)
                 ORDER BY seq DESC LIMIT ?3 OFFSET ?4"
            ))?;
            let rows = stmt.query_map(
                params![
                    thread_id,
                    status.map(RunStatus::as_str),
                    i64::try_from(limit).unwrap_or(i64::MAX),
                    i64::try_from(offset).unwrap_or(i64::MAX)
                ],
                run_row,
            )?;
            rows.map(|r| finish_run_row(r?)).collect()
        })
    }

    fn cancel_run(
        &self,
        thread_id: String,
        run_id: String,
        action: String,
    ) -> BoxFuture<'_, DbResult<Option<RunRow>>> {
        self.call(move |conn| {
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let Some(run) = get_run(&tx, &run_id)?.filter(|r| r.thread_id == thread_id) else {
                return Ok(None);
            };
            let now = now_ms();
            match run.status {
                RunStatus::Pending if action == "rollback" => {
                    tx.execute("DELETE FROM sg_runs WHERE run_id = ?1", [&run_id])?;
                }
                RunStatus::Pending => {
                    tx.execute(
                        "UPDATE sg_runs SET status = 'interrupted', updated_at = ?2, ended_at = ?2 WHERE run_id = ?1",
                        params![run_id, now],
                    )?;
                }
                RunStatus::Running => {
                    tx.execute(
                        "UPDATE sg_runs SET cancel = ?2, updated_at = ?3 WHERE run_id = ?1",
                        params![run_id, action, now],
                    )?;
                }
                _ => {}
            }
            if run.status == RunStatus::Pending && !has_active_run(&tx, &thread_id)? {
                tx.execute(
                    "UPDATE sg_threads SET status = CASE WHEN interrupts NOT IN ('[]', '{}') THEN 'interrupted' ELSE 'idle' END
                     WHERE thread_id = ?1 AND status = 'busy'",
                    [&thread_id],
                )?;
            }
            let row = get_run(&tx, &run_id)?;
            tx.commit()?;
            Ok(row.or(Some(run)))
        })
    }

    fn delete_run(&self, thread_id: String, run_id: String) -> BoxFuture<'_, DbResult<bool>> {
        self.call(move |conn| {
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let Some(run) = get_run(&tx, &run_id)?.filter(|r| r.thread_id == thread_id) else {
                return Ok(false);
            };
            if !run.status.is_final() {
                return Err(DbError::Conflict(format!(
                    "run {run_id} is {}: cancel it before deleting it",
                    run.status.as_str()
                )));
            }
            tx.execute("DELETE FROM sg_run_events WHERE run_id = ?1", [&run_id])?;
            tx.execute("DELETE FROM sg_runs WHERE run_id = ?1", [&run_id])?;
            tx.commit()?;
            Ok(true)
        })
    }

    fn claim_run(
        &self,
        worker: String,
        lease: Duration,
    ) -> BoxFuture<'_, DbResult<Option<RunRow>>> {
        self.call(move |conn| {
            let now = now_ms();
            let until = now.saturating_add(i64::try_from(lease.as_millis()).unwrap_or(i64::MAX));
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let id: Option<String> = tx
                .query_row(
                    "SELECT r.run_id FROM sg_runs r
                     WHERE ((r.status = 'pending' AND (r.run_after IS NULL OR r.run_after <= ?1))
                            OR (r.status = 'running' AND r.lease_until < ?1))
                       AND NOT EXISTS (SELECT 1 FROM sg_runs o WHERE o.thread_id = r.thread_id
                           AND o.seq <> r.seq AND o.status = 'running' AND o.lease_until >= ?1)
                       AND NOT EXISTS (SELECT 1 FROM sg_runs o WHERE o.thread_id = r.thread_id
                           AND o.seq < r.seq AND o.status IN ('pending', 'running'))
                     ORDER BY r.seq LIMIT 1",
                    [now],
                    |row| row.get(0),
                )
                .optional()?;
            let Some(id) = id else {
                return Ok(None);
            };
            tx.execute(
                "UPDATE sg_runs SET status = 'running', worker = ?2, lease_until = ?3,
                     attempt = attempt + 1, updated_at = ?4 WHERE run_id = ?1",
                params![id, worker, until, now],
            )?;
            let row = get_run(&tx, &id)?;
            tx.commit()?;
            Ok(row)
        })
    }

    fn renew_lease(&self, claim: Claim, lease: Duration) -> BoxFuture<'_, DbResult<Lease>> {
        self.call(move |conn| {
            let until =
                now_ms().saturating_add(i64::try_from(lease.as_millis()).unwrap_or(i64::MAX));
            let cancel: Option<Option<String>> = conn
                .query_row(
                    "UPDATE sg_runs SET lease_until = ?4
                     WHERE run_id = ?1 AND worker = ?2 AND attempt = ?3 AND status = 'running'
                     RETURNING cancel",
                    params![claim.run_id, claim.worker, claim.attempt, until],
                    |row| row.get(0),
                )
                .optional()?;
            Ok(match cancel {
                Some(cancel) => Lease::Held { cancel },
                None => Lease::Lost,
            })
        })
    }

    fn release_run(&self, claim: Claim) -> BoxFuture<'_, DbResult<()>> {
        self.call(move |conn| {
            conn.execute(
                "UPDATE sg_runs SET status = 'pending', worker = NULL, lease_until = NULL
                 WHERE run_id = ?1 AND worker = ?2 AND attempt = ?3 AND status = 'running'",
                params![claim.run_id, claim.worker, claim.attempt],
            )?;
            Ok(())
        })
    }

    fn requeue_own(&self, _prefix: String) -> BoxFuture<'_, DbResult<u64>> {
        // One process per database file: a run left running is a dead process's.
        self.call(move |conn| {
            let n = conn.execute(
                "UPDATE sg_runs SET status = 'pending', worker = NULL, lease_until = NULL
                 WHERE status = 'running'",
                [],
            )?;
            Ok(u64::try_from(n).unwrap_or(0))
        })
    }

    fn finish_run(&self, claim: Claim, finish: Finish) -> BoxFuture<'_, DbResult<bool>> {
        let Claim {
            run_id,
            worker,
            attempt,
        } = claim;
        self.call(move |conn| {
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let thread_id: Option<String> = tx
                .query_row(
                    "SELECT thread_id FROM sg_runs
                     WHERE run_id = ?1 AND worker = ?2 AND attempt = ?3 AND status = 'running'",
                    params![run_id, worker, attempt],
                    |row| row.get(0),
                )
                .optional()?;
            let Some(thread_id) = thread_id else {
                return Ok(false);
            };
            let now = now_ms();
            if finish.delete_run {
                tx.execute("DELETE FROM sg_runs WHERE run_id = ?1", [&run_id])?;
            } else {
                tx.execute(
                    "UPDATE sg_runs SET status = ?2, output = ?3, updated_at = ?4, ended_at = ?4,
                         worker = NULL, lease_until = NULL WHERE run_id = ?1",
                    params![run_id, finish.status.as_str(), finish.output.to_string(), now],
                )?;
            }
            if let Some(hook) = &finish.webhook {
                tx.execute(
                    "INSERT INTO sg_webhooks (delivery_id, run_id, url, body, state, next_attempt_at, created_at)
                     VALUES (?1, ?2, ?3, ?4, 'pending', ?5, ?5)",
                    params![
                        uuid::Uuid::new_v4().to_string(),
                        run_id,
                        hook.url,
                        hook.body.to_string(),
                        now
                    ],
                )?;
            }
            let status = if has_active_run(&tx, &thread_id)? {
                ThreadStatus::Busy
            } else {
                finish.thread_status
            };
            match &finish.values {
                Some(values) => tx.execute(
                    "UPDATE sg_threads SET status = ?2, state_values = ?3, interrupts = ?4, updated_at = ?5
                     WHERE thread_id = ?1",
                    params![
                        thread_id,
                        status.as_str(),
                        values.to_string(),
                        finish.interrupts.to_string(),
                        now
                    ],
                )?,
                None => tx.execute(
                    "UPDATE sg_threads SET status = ?2, updated_at = ?3 WHERE thread_id = ?1",
                    params![thread_id, status.as_str(), now],
                )?,
            };
            tx.commit()?;
            Ok(true)
        })
    }

    fn append_events(
        &self,
        run_id: String,
        events: Vec<(String, Value)>,
    ) -> BoxFuture<'_, DbResult<i64>> {
        self.call(move |conn| {
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let mut seq: i64 = tx.query_row(
                "SELECT COALESCE(MAX(seq), 0) FROM sg_run_events WHERE run_id = ?1",
                [&run_id],
                |row| row.get(0),
            )?;
            {
                let mut stmt = tx.prepare_cached(
                    "INSERT INTO sg_run_events (run_id, seq, event, data) VALUES (?1, ?2, ?3, ?4)",
                )?;
                for (event, data) in &events {
                    seq += 1;
                    stmt.execute(params![run_id, seq, event, data.to_string()])?;
                }
            }
            tx.commit()?;
            Ok(seq)
        })
    }

    fn last_event_seq(&self, run_id: String) -> BoxFuture<'_, DbResult<i64>> {
        self.call(move |conn| {
            Ok(conn.query_row(
                "SELECT COALESCE(MAX(seq), 0) FROM sg_run_events WHERE run_id = ?1",
                [&run_id],
                |row| row.get(0),
            )?)
        })
    }

    fn events_after(
        &self,
        run_id: String,
        after: i64,
        limit: usize,
    ) -> BoxFuture<'_, DbResult<Vec<EventRow>>> {
        self.call(move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT seq, event, data FROM sg_run_events WHERE run_id = ?1 AND seq > ?2
                 ORDER BY seq LIMIT ?3",
            )?;
            let rows = stmt.query_map(
                params![run_id, after, i64::try_from(limit).unwrap_or(i64::MAX)],
                |row| Ok((row.get(0)?, row.get(1)?, row.get::<_, String>(2)?)),
            )?;
            rows.map(|r| {
                let (seq, event, data) = r?;
                Ok(EventRow {
                    seq,
                    event,
                    data: parse_json(&data, "run event")?,
                })
            })
            .collect()
        })
    }

    fn sweep_events(&self, age: Duration) -> BoxFuture<'_, DbResult<u64>> {
        self.call(move |conn| {
            let before =
                now_ms().saturating_sub(i64::try_from(age.as_millis()).unwrap_or(i64::MAX));
            let n = conn.execute(
                "DELETE FROM sg_run_events WHERE run_id IN
                     (SELECT run_id FROM sg_runs WHERE ended_at IS NOT NULL AND ended_at < ?1)",
                [before],
            )?;
            Ok(n as u64)
        })
    }
}

/// Queues `run` in the caller's transaction (see [`Queue::insert_run`]).
pub(super) fn insert_run(tx: &rusqlite::Connection, run: &NewRun) -> DbResult<RunRow> {
    let r = &run.row;
    let now = now_ms();
    // A thread that names no graph yet is bound to the run's, in the run's own
    // transaction: no crash leaves a run without its graph.
    match get_thread(tx, &r.thread_id)? {
        None if !run.create_thread => {
            return Err(DbError::Conflict(format!(
                "thread {} not found",
                r.thread_id
            )));
        }
        None => insert_thread(tx, &r.thread_id, &run.thread_metadata, now)?,
        Some(mut t) if !t.metadata.contains_key("graph_id") => {
            t.metadata.extend(run.thread_metadata.clone());
            tx.execute(
                "UPDATE sg_threads SET metadata = ?2 WHERE thread_id = ?1",
                params![r.thread_id, Value::Object(t.metadata).to_string()],
            )?;
        }
        Some(_) => {}
    }
    match BeforeQueue::of(&r.multitask_strategy) {
        BeforeQueue::RejectIfBusy if has_active_run(tx, &r.thread_id)? => {
            return Err(busy(&r.thread_id));
        }
        BeforeQueue::StopActive(action) => stop_active(tx, &r.thread_id, action, now)?,
        _ => {}
    }
    let run_after = run
        .delay
        .map(|d| now.saturating_add(i64::try_from(d.as_millis()).unwrap_or(i64::MAX)));
    tx.execute(
        "INSERT INTO sg_runs (run_id, thread_id, assistant_id, created_at, updated_at, status,
             metadata, multitask_strategy, kwargs, run_after)
         VALUES (?1, ?2, ?3, ?4, ?4, 'pending', ?5, ?6, ?7, ?8)",
        params![
            r.run_id,
            r.thread_id,
            r.assistant_id,
            now,
            Value::Object(r.metadata.clone()).to_string(),
            r.multitask_strategy,
            r.kwargs.to_string(),
            run_after
        ],
    )?;
    tx.execute(
        "UPDATE sg_threads SET status = 'busy', updated_at = ?2 WHERE thread_id = ?1",
        params![r.thread_id, now],
    )?;
    get_run(tx, &r.run_id)?.ok_or_else(|| DbError::Task("an inserted run vanished".into()))
}
