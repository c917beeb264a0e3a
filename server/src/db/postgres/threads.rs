//! [`Threads`] on PostgreSQL.

use serde_json::{Map, Value};
use stategraph::BoxFuture;
use tokio_postgres::GenericClient;

use super::{NOW_MS, PgDb, THREAD_COLUMNS, pg, thread_row};
use crate::db::{DbError, DbResult, ThreadQuery, ThreadRow, ThreadStatus, Threads};

/// The thread, if stored; with `lock`, its row stays locked until the transaction
/// ends (the order every transaction takes: thread first, then its runs).
pub(super) async fn get_thread(
    c: &impl GenericClient,
    thread_id: &str,
    lock: bool,
) -> DbResult<Option<ThreadRow>> {
    let sql = format!(
        "SELECT {THREAD_COLUMNS} FROM sg_threads WHERE thread_id = $1{}",
        if lock { " FOR UPDATE" } else { "" }
    );
    c.query_opt(&sql, &[&thread_id])
        .await?
        .as_ref()
        .map(thread_row)
        .transpose()
}

/// Inserts the thread unless it exists; whether it was inserted.
pub(super) async fn insert_thread(
    c: &impl GenericClient,
    thread_id: &str,
    metadata: &Map<String, Value>,
) -> DbResult<bool> {
    let n = c
        .execute(
            &format!(
                "INSERT INTO sg_threads (thread_id, created_at, updated_at, metadata, status, state_values, interrupts)
                 VALUES ($1, {NOW_MS}, {NOW_MS}, $2, 'idle', '{{}}', '[]') ON CONFLICT (thread_id) DO NOTHING"
            ),
            &[&thread_id, &Value::Object(metadata.clone())],
        )
        .await?;
    Ok(n > 0)
}

/// Whether `thread_id` has a pending or running run.
pub(super) async fn has_active_run(c: &impl GenericClient, thread_id: &str) -> DbResult<bool> {
    Ok(c.query_opt(
        "SELECT 1 FROM sg_runs WHERE thread_id = $1 AND status IN ('pending', 'running') LIMIT 1",
        &[&thread_id],
    )
    .await?
    .is_some())
}

const MATCHING: &str = "FROM sg_threads
     WHERE ($1::jsonb = '{}'::jsonb OR metadata @> $1)
       AND ($2::jsonb = '{}'::jsonb OR state_values @> $2)
       AND ($3::text IS NULL OR status = $3)
       AND ($4::text[] IS NULL OR thread_id = ANY($4))";

impl Threads for PgDb {
    fn create_thread(
        &self,
        thread_id: String,
        metadata: Map<String, Value>,
        if_exists_do_nothing: bool,
    ) -> BoxFuture<'_, DbResult<ThreadRow>> {
        Box::pin(async move {
            let client = self.client().await?;
            if !insert_thread(pg(&client), &thread_id, &metadata).await? && !if_exists_do_nothing {
                return Err(DbError::Conflict(format!(
                    "thread {thread_id} already exists: use another id, or `if_exists: \"do_nothing\"`"
                )));
            }
            get_thread(pg(&client), &thread_id, false)
                .await?
                .ok_or_else(|| DbError::Task("a created thread vanished".into()))
        })
    }

    fn get_thread(&self, thread_id: String) -> BoxFuture<'_, DbResult<Option<ThreadRow>>> {
        Box::pin(async move {
            let client = self.client().await?;
            get_thread(pg(&client), &thread_id, false).await
        })
    }

    fn patch_thread(
        &self,
        thread_id: String,
        metadata: Map<String, Value>,
    ) -> BoxFuture<'_, DbResult<Option<ThreadRow>>> {
        Box::pin(async move {
            let client = self.client().await?;
            client
                .query_opt(
                    &format!(
                        "UPDATE sg_threads SET metadata = metadata || $2, updated_at = {NOW_MS}
                         WHERE thread_id = $1 RETURNING {THREAD_COLUMNS}"
                    ),
                    &[&thread_id, &Value::Object(metadata)],
                )
                .await?
                .as_ref()
                .map(thread_row)
                .transpose()
        })
    }

    fn set_thread_values(
        &self,
        thread_id: String,
        values: Value,
        interrupts: Value,
        status: ThreadStatus,
    ) -> BoxFuture<'_, DbResult<()>> {
        Box::pin(async move {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            if get_thread(&*tx, &thread_id, true).await?.is_none() {
                return Ok(());
            }
            let status = if has_active_run(&*tx, &thread_id).await? {
                ThreadStatus::Busy
            } else {
                status
            };
            tx.execute(
                &format!(
                    "UPDATE sg_threads SET state_values = $2, interrupts = $3, status = $4, updated_at = {NOW_MS}
                     WHERE thread_id = $1"
                ),
                &[&thread_id, &values, &interrupts, &status.as_str()],
            )
            .await?;
            tx.commit().await?;
            Ok(())
        })
    }

    fn delete_thread(&self, thread_id: String) -> BoxFuture<'_, DbResult<bool>> {
        Box::pin(async move {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            let existed = get_thread(&*tx, &thread_id, true).await?.is_some();
            delete_thread_rows(&*tx, &thread_id).await?;
            tx.commit().await?;
            Ok(existed)
        })
    }

    fn search_threads(&self, query: ThreadQuery) -> BoxFuture<'_, DbResult<Vec<ThreadRow>>> {
        Box::pin(async move {
            let client = self.client().await?;
            let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
            let offset = i64::try_from(query.offset).unwrap_or(i64::MAX);
            // The column and direction come from a closed set, never from the request.
            let column = query.order.column();
            let direction = if query.ascending { "ASC" } else { "DESC" };
            let rows = client
                .query(
                    &format!(
                        "SELECT {THREAD_COLUMNS} {MATCHING}
                         ORDER BY {column} {direction}, thread_id {direction} LIMIT $5 OFFSET $6"
                    ),
                    &[
                        &Value::Object(query.metadata),
                        &Value::Object(query.values),
                        &query.status.map(ThreadStatus::as_str),
                        &query.ids,
                        &limit,
                        &offset,
                    ],
                )
                .await?;
            rows.iter().map(thread_row).collect()
        })
    }

    fn count_threads(&self, query: ThreadQuery) -> BoxFuture<'_, DbResult<u64>> {
        Box::pin(async move {
            let client = self.client().await?;
            let n: i64 = client
                .query_one(
                    &format!("SELECT count(*) {MATCHING}"),
                    &[
                        &Value::Object(query.metadata),
                        &Value::Object(query.values),
                        &query.status.map(ThreadStatus::as_str),
                        &query.ids,
                    ],
                )
                .await?
                .try_get(0)?;
            Ok(u64::try_from(n).unwrap_or(0))
        })
    }
}

/// Deletes a thread's rows — its runs and their events, its own events, its crons
/// and itself — in the caller's transaction (which locked the thread's row).
pub(super) async fn delete_thread_rows(c: &impl GenericClient, thread_id: &str) -> DbResult<()> {
    c.execute(
        "DELETE FROM sg_run_events WHERE run_id IN (SELECT run_id FROM sg_runs WHERE thread_id = $1)",
        &[&thread_id],
    )
    .await?;
    c.execute(
        "DELETE FROM sg_run_events WHERE run_id = $1",
        &[&crate::db::thread_events_key(thread_id)],
    )
    .await?;
    c.execute("DELETE FROM sg_runs WHERE thread_id = $1", &[&thread_id])
        .await?;
    // A thread's crons go with it.
    c.execute("DELETE FROM sg_crons WHERE thread_id = $1", &[&thread_id])
        .await?;
    c.execute("DELETE FROM sg_threads WHERE thread_id = $1", &[&thread_id])
        .await?;
    Ok(())
}
