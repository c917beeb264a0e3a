//! [`Assistants`] on PostgreSQL: a change locks the assistant's row, so two
//! processes changing it at once make two versions, one after the other.

use serde_json::Value;
use stategraph::BoxFuture;
use tokio_postgres::{GenericClient, Row};

use super::{PgDb, object, pg};
use crate::db::{AssistantChange, AssistantRow, Assistants, DbError, DbResult, now_ms};

const COLUMNS: &str = "assistant_id, graph_id, name, description, config, context, metadata, version, created_at, updated_at";

fn assistant(row: &Row) -> DbResult<AssistantRow> {
    Ok(AssistantRow {
        assistant_id: row.try_get(0)?,
        graph_id: row.try_get(1)?,
        name: row.try_get(2)?,
        description: row.try_get(3)?,
        config: object(row.try_get(4)?),
        context: object(row.try_get(5)?),
        metadata: object(row.try_get(6)?),
        version: row.try_get(7)?,
        created_at: row.try_get(8)?,
        updated_at: row.try_get(9)?,
    })
}

async fn current(c: &impl GenericClient, id: &str, lock: bool) -> DbResult<Option<AssistantRow>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM sg_assistants WHERE assistant_id = $1{}",
        if lock { " FOR UPDATE" } else { "" }
    );
    c.query_opt(&sql, &[&id])
        .await?
        .as_ref()
        .map(assistant)
        .transpose()
}

/// Writes `a` into `table` (the current row, or a version): a row of the same key
/// is replaced, or with `keep` left as it is. How many rows were written.
async fn write(
    c: &impl GenericClient,
    (table, key): (&str, &str),
    keep: bool,
    a: &AssistantRow,
) -> DbResult<u64> {
    let on_conflict = if keep {
        "DO NOTHING"
    } else {
        "DO UPDATE SET graph_id = $2, name = $3, description = $4, config = $5, context = $6,
             metadata = $7, version = $8, created_at = $9, updated_at = $10"
    };
    let n = c
        .execute(
            &format!(
                "INSERT INTO {table} ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
                 ON CONFLICT ({key}) {on_conflict}"
            ),
            &[
                &a.assistant_id,
                &a.graph_id,
                &a.name,
                &a.description,
                &Value::Object(a.config.clone()),
                &Value::Object(a.context.clone()),
                &Value::Object(a.metadata.clone()),
                &a.version,
                &a.created_at,
                &a.updated_at,
            ],
        )
        .await?;
    Ok(n)
}

const CURRENT: (&str, &str) = ("sg_assistants", "assistant_id");
const VERSIONS: (&str, &str) = ("sg_assistant_versions", "assistant_id, version");

impl Assistants for PgDb {
    fn insert_assistant(
        &self,
        mut row: AssistantRow,
        if_exists_do_nothing: bool,
    ) -> BoxFuture<'_, DbResult<AssistantRow>> {
        Box::pin(async move {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            let now = now_ms();
            (row.version, row.created_at, row.updated_at) = (1, now, now);
            let inserted = write(&*tx, CURRENT, true, &row).await?;
            if inserted == 0 {
                let existing = current(&*tx, &row.assistant_id, false).await?;
                return match existing {
                    Some(a) if if_exists_do_nothing => Ok(a),
                    _ => Err(DbError::Conflict(format!(
                        "assistant {} already exists: use another id, or `if_exists: \"do_nothing\"`",
                        row.assistant_id
                    ))),
                };
            }
            write(&*tx, VERSIONS, false, &row).await?;
            tx.commit().await?;
            Ok(row)
        })
    }

    fn get_assistant(&self, assistant_id: String) -> BoxFuture<'_, DbResult<Option<AssistantRow>>> {
        Box::pin(async move {
            let client = self.client().await?;
            current(pg(&client), &assistant_id, false).await
        })
    }

    fn update_assistant(
        &self,
        assistant_id: String,
        change: AssistantChange,
    ) -> BoxFuture<'_, DbResult<Option<AssistantRow>>> {
        Box::pin(async move {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            let Some(now) = current(&*tx, &assistant_id, true).await? else {
                return Ok(None);
            };
            let last: i32 = tx
                .query_one(
                    "SELECT COALESCE(MAX(version), 0) FROM sg_assistant_versions WHERE assistant_id = $1",
                    &[&assistant_id],
                )
                .await?
                .try_get(0)?;
            let next = change.apply(&now, last + 1, now_ms());
            write(&*tx, CURRENT, false, &next).await?;
            write(&*tx, VERSIONS, false, &next).await?;
            tx.commit().await?;
            Ok(Some(next))
        })
    }

    fn delete_assistant(&self, assistant_id: String) -> BoxFuture<'_, DbResult<bool>> {
        Box::pin(async move {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            tx.execute(
                "DELETE FROM sg_assistant_versions WHERE assistant_id = $1",
                &[&assistant_id],
            )
            .await?;
            let n = tx
                .execute(
                    "DELETE FROM sg_assistants WHERE assistant_id = $1",
                    &[&assistant_id],
                )
                .await?;
            tx.commit().await?;
            Ok(n > 0)
        })
    }

    fn list_assistants(&self) -> BoxFuture<'_, DbResult<Vec<AssistantRow>>> {
        Box::pin(async move {
            let client = self.client().await?;
            let rows = client
                .query(&format!("SELECT {COLUMNS} FROM sg_assistants"), &[])
                .await?;
            rows.iter().map(assistant).collect()
        })
    }

    fn assistant_versions(
        &self,
        assistant_id: String,
    ) -> BoxFuture<'_, DbResult<Option<Vec<AssistantRow>>>> {
        Box::pin(async move {
            let client = self.client().await?;
            if current(pg(&client), &assistant_id, false).await?.is_none() {
                return Ok(None);
            }
            let rows = client
                .query(
                    &format!(
                        "SELECT {COLUMNS} FROM sg_assistant_versions WHERE assistant_id = $1
                         ORDER BY version DESC"
                    ),
                    &[&assistant_id],
                )
                .await?;
            rows.iter()
                .map(assistant)
                .collect::<DbResult<Vec<_>>>()
                .map(Some)
        })
    }

    fn set_latest_version(
        &self,
        assistant_id: String,
        version: i32,
    ) -> BoxFuture<'_, DbResult<Option<AssistantRow>>> {
        Box::pin(async move {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            let Some(now) = current(&*tx, &assistant_id, true).await? else {
                return Ok(None);
            };
            let chosen = tx
                .query_opt(
                    &format!(
                        "SELECT {COLUMNS} FROM sg_assistant_versions WHERE assistant_id = $1 AND version = $2"
                    ),
                    &[&assistant_id, &version],
                )
                .await?;
            let Some(mut chosen) = chosen.as_ref().map(assistant).transpose()? else {
                return Ok(None);
            };
            chosen.created_at = now.created_at;
            chosen.updated_at = now_ms();
            write(&*tx, CURRENT, false, &chosen).await?;
            tx.commit().await?;
            Ok(Some(chosen))
        })
    }
}
