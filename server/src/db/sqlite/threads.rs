//! [`Threads`] on SQLite.

use rusqlite::params;
use serde_json::{Map, Value};
use stategraph::BoxFuture;

use super::{SqliteDb, get_thread, has_active_run, insert_thread, matching_threads};
use crate::db::{DbError, DbResult, ThreadQuery, ThreadRow, ThreadStatus, Threads, now_ms};

impl Threads for SqliteDb {
    fn create_thread(
        &self,
        thread_id: String,
        metadata: Map<String, Value>,
        if_exists_do_nothing: bool,
    ) -> BoxFuture<'_, DbResult<ThreadRow>> {
        self.call(move |conn| {
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            if let Some(existing) = get_thread(&tx, &thread_id)? {
                if if_exists_do_nothing {
                    return Ok(existing);
                }
                return Err(DbError::Conflict(format!(
                    "thread {thread_id} already exists: use another id, or `if_exists: \"do_nothing\"`"
                )));
            }
            insert_thread(&tx, &thread_id, &metadata, now_ms())?;
            let row = get_thread(&tx, &thread_id)?;
            tx.commit()?;
            row.ok_or_else(|| DbError::Task("a created thread vanished".into()))
        })
    }

    fn get_thread(&self, thread_id: String) -> BoxFuture<'_, DbResult<Option<ThreadRow>>> {
        self.call(move |conn| get_thread(conn, &thread_id))
    }

    fn patch_thread(
        &self,
        thread_id: String,
        metadata: Map<String, Value>,
    ) -> BoxFuture<'_, DbResult<Option<ThreadRow>>> {
        self.call(move |conn| {
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let Some(mut t) = get_thread(&tx, &thread_id)? else {
                return Ok(None);
            };
            t.metadata.extend(metadata);
            tx.execute(
                "UPDATE sg_threads SET metadata = ?2, updated_at = ?3 WHERE thread_id = ?1",
                params![
                    thread_id,
                    Value::Object(t.metadata.clone()).to_string(),
                    now_ms()
                ],
            )?;
            let row = get_thread(&tx, &thread_id)?;
            tx.commit()?;
            Ok(row)
        })
    }

    fn set_thread_values(
        &self,
        thread_id: String,
        values: Value,
        interrupts: Value,
        status: ThreadStatus,
    ) -> BoxFuture<'_, DbResult<()>> {
        self.call(move |conn| {
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let status = if has_active_run(&tx, &thread_id)? {
                ThreadStatus::Busy
            } else {
                status
            };
            tx.execute(
                "UPDATE sg_threads SET state_values = ?2, interrupts = ?3, status = ?4, updated_at = ?5
                 WHERE thread_id = ?1",
                params![
                    thread_id,
                    values.to_string(),
                    interrupts.to_string(),
                    status.as_str(),
                    now_ms()
                ],
            )?;
            tx.commit()?;
            Ok(())
        })
    }

    fn delete_thread(&self, thread_id: String) -> BoxFuture<'_, DbResult<bool>> {
        self.call(move |conn| {
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let existed = delete_thread_rows(&tx, &thread_id)?;
            tx.commit()?;
            Ok(existed)
        })
    }

    fn search_threads(&self, query: ThreadQuery) -> BoxFuture<'_, DbResult<Vec<ThreadRow>>> {
        self.call(move |conn| {
            let all = matching_threads(conn, &query)?;
            Ok(all
                .into_iter()
                .skip(query.offset)
                .take(query.limit)
                .collect())
        })
    }

    fn count_threads(&self, query: ThreadQuery) -> BoxFuture<'_, DbResult<u64>> {
        self.call(move |conn| Ok(matching_threads(conn, &query)?.len() as u64))
    }
}

/// Deletes a thread's rows — its runs and their events, its own events, its crons
/// and itself — in the caller's transaction; whether it existed.
pub(super) fn delete_thread_rows(tx: &rusqlite::Connection, thread_id: &str) -> DbResult<bool> {
    tx.execute(
        "DELETE FROM sg_run_events WHERE run_id IN (SELECT run_id FROM sg_runs WHERE thread_id = ?1)",
        [thread_id],
    )?;
    tx.execute(
        "DELETE FROM sg_run_events WHERE run_id = ?1",
        [&crate::db::thread_events_key(thread_id)],
    )?;
    tx.execute("DELETE FROM sg_runs WHERE thread_id = ?1", [thread_id])?;
    // A thread's crons go with it.
    tx.execute("DELETE FROM sg_crons WHERE thread_id = ?1", [thread_id])?;
    Ok(tx.execute("DELETE FROM sg_threads WHERE thread_id = ?1", [thread_id])? > 0)
}
