//! [`Crons`] on SQLite: a write transaction (`BEGIN IMMEDIATE`) holds the file's one
//! writer lock, so the firing's compare-and-set and its run's insert are one step
//! for every process on the file.

use rusqlite::{Connection, OptionalExtension, Row, params};
use serde_json::Value;
use stategraph::BoxFuture;

use super::SqliteDb;
use super::queue::insert_run;
use crate::db::{
    CronQuery, CronRow, Crons, DbError, DbResult, Fired, Firing, now_ms, order_crons, parse_object,
};

const CRON_COLUMNS: &str = "cron_id, assistant_id, thread_id, schedule, timezone, end_time, \
     enabled, on_run_completed, payload, metadata, next_run_at, created_at, updated_at";

type RawCron = (CronRow, String, String);

fn cron_row(row: &Row<'_>) -> rusqlite::Result<RawCron> {
    Ok((
        CronRow {
            cron_id: row.get(0)?,
            assistant_id: row.get(1)?,
            thread_id: row.get(2)?,
            schedule: row.get(3)?,
            timezone: row.get(4)?,
            end_time: row.get(5)?,
            enabled: row.get(6)?,
            on_run_completed: row.get(7)?,
            payload: serde_json::Map::new(),
            metadata: serde_json::Map::new(),
            next_run_at: row.get(10)?,
            created_at: row.get(11)?,
            updated_at: row.get(12)?,
        },
        row.get(8)?,
        row.get(9)?,
    ))
}

fn finish_cron(raw: RawCron) -> DbResult<CronRow> {
    let (mut c, payload, metadata) = raw;
    c.payload = parse_object(&payload, "cron payload")?;
    c.metadata = parse_object(&metadata, "cron metadata")?;
    Ok(c)
}

fn get_cron(conn: &Connection, cron_id: &str) -> DbResult<Option<CronRow>> {
    conn.query_row(
        &format!("SELECT {CRON_COLUMNS} FROM sg_crons WHERE cron_id = ?1"),
        [cron_id],
        cron_row,
    )
    .optional()?
    .map(finish_cron)
    .transpose()
}

fn crons_where(
    conn: &Connection,
    filter: &str,
    args: &[&dyn rusqlite::ToSql],
) -> DbResult<Vec<CronRow>> {
    let mut stmt = conn.prepare(&format!("SELECT {CRON_COLUMNS} FROM sg_crons {filter}"))?;
    let rows = stmt.query_map(args, cron_row)?;
    rows.map(|r| finish_cron(r?)).collect()
}

impl Crons for SqliteDb {
    fn insert_cron(&self, cron: CronRow) -> BoxFuture<'_, DbResult<CronRow>> {
        self.call(move |conn| {
            let now = now_ms();
            conn.execute(
                &format!(
                    "INSERT INTO sg_crons ({CRON_COLUMNS})
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?12)"
                ),
                params![
                    cron.cron_id,
                    cron.assistant_id,
                    cron.thread_id,
                    cron.schedule,
                    cron.timezone,
                    cron.end_time,
                    cron.enabled,
                    cron.on_run_completed,
                    Value::Object(cron.payload.clone()).to_string(),
                    Value::Object(cron.metadata.clone()).to_string(),
                    cron.next_run_at,
                    now
                ],
            )?;
            get_cron(conn, &cron.cron_id)?
                .ok_or_else(|| DbError::Task("an inserted cron vanished".into()))
        })
    }

    fn get_cron(&self, cron_id: String) -> BoxFuture<'_, DbResult<Option<CronRow>>> {
        self.call(move |conn| get_cron(conn, &cron_id))
    }

    fn update_cron(
        &self,
        cron: CronRow,
        reschedule: bool,
    ) -> BoxFuture<'_, DbResult<Option<CronRow>>> {
        self.call(move |conn| {
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let changed = tx.execute(
                "UPDATE sg_crons SET schedule = ?2, timezone = ?3, end_time = ?4, enabled = ?5,
                     on_run_completed = ?6, payload = ?7, metadata = ?8,
                     next_run_at = CASE WHEN ?9 THEN ?10 ELSE next_run_at END, updated_at = ?11
                 WHERE cron_id = ?1",
                params![
                    cron.cron_id,
                    cron.schedule,
                    cron.timezone,
                    cron.end_time,
                    cron.enabled,
                    cron.on_run_completed,
                    Value::Object(cron.payload.clone()).to_string(),
                    Value::Object(cron.metadata.clone()).to_string(),
                    reschedule,
                    cron.next_run_at,
                    now_ms()
                ],
            )?;
            let row = if changed == 0 {
                None
            } else {
                get_cron(&tx, &cron.cron_id)?
            };
            tx.commit()?;
            Ok(row)
        })
    }

    fn delete_cron(&self, cron_id: String) -> BoxFuture<'_, DbResult<bool>> {
        self.call(move |conn| {
            Ok(conn.execute("DELETE FROM sg_crons WHERE cron_id = ?1", [&cron_id])? > 0)
        })
    }

    fn search_crons(&self, query: CronQuery) -> BoxFuture<'_, DbResult<Vec<CronRow>>> {
        self.call(move |conn| Ok(order_crons(crons_where(conn, "", &[])?, &query)))
    }

    fn count_crons(&self, query: CronQuery) -> BoxFuture<'_, DbResult<u64>> {
        self.call(move |conn| {
            let n = crons_where(conn, "", &[])?
                .iter()
                .filter(|c| query.matches(c))
                .count();
            Ok(u64::try_from(n).unwrap_or(u64::MAX))
        })
    }

    fn due_crons(&self, now: i64, limit: usize) -> BoxFuture<'_, DbResult<Vec<CronRow>>> {
        self.call(move |conn| {
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            crons_where(
                conn,
                "WHERE enabled = 1 AND next_run_at <= ?1 ORDER BY next_run_at LIMIT ?2",
                &[&now, &limit],
            )
        })
    }

    fn next_cron_tick(&self) -> BoxFuture<'_, DbResult<Option<i64>>> {
        self.call(move |conn| {
            Ok(conn.query_row(
                "SELECT MIN(next_run_at) FROM sg_crons WHERE enabled = 1",
                [],
                |row| row.get(0),
            )?)
        })
    }

    fn fire_cron(&self, firing: Firing) -> BoxFuture<'_, DbResult<Fired>> {
        self.call(move |conn| {
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let claimed = tx.execute(
                "UPDATE sg_crons SET next_run_at = ?3
                 WHERE cron_id = ?1 AND next_run_at = ?2 AND enabled = 1",
                params![firing.cron_id, firing.due, firing.next],
            )?;
            if claimed == 0 {
                return Ok(Fired::Taken);
            }
            let run = firing
                .run
                .as_ref()
                .map(|r| insert_run(&tx, r).map(Box::new))
                .transpose()?;
            tx.commit()?;
            Ok(Fired::Claimed(run))
        })
    }
}
