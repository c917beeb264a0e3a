//! [`Assistants`] on SQLite.

use rusqlite::{Connection, OptionalExtension, Row, params};
use serde_json::Value;
use stategraph::BoxFuture;

use super::SqliteDb;
use crate::db::{
    AssistantChange, AssistantRow, Assistants, DbError, DbResult, now_ms, parse_object,
};

const COLUMNS: &str = "assistant_id, graph_id, name, description, config, context, metadata, version, created_at, updated_at";

type Raw = (AssistantRow, [String; 3]);

fn raw(row: &Row<'_>) -> rusqlite::Result<Raw> {
    Ok((
        AssistantRow {
            assistant_id: row.get(0)?,
            graph_id: row.get(1)?,
            name: row.get(2)?,
            description: row.get(3)?,
            config: serde_json::Map::new(),
            context: serde_json::Map::new(),
            metadata: serde_json::Map::new(),
            version: row.get(7)?,
            created_at: row.get(8)?,
            updated_at: row.get(9)?,
        },
        [row.get(4)?, row.get(5)?, row.get(6)?],
    ))
}

fn finish((mut a, [config, context, metadata]): Raw) -> DbResult<AssistantRow> {
    a.config = parse_object(&config, "assistant config")?;
    a.context = parse_object(&context, "assistant context")?;
    a.metadata = parse_object(&metadata, "assistant metadata")?;
    Ok(a)
}

fn select(
    conn: &Connection,
    table: &str,
    filter: &str,
    args: &[&dyn rusqlite::ToSql],
) -> DbResult<Vec<AssistantRow>> {
    let mut stmt = conn.prepare(&format!("SELECT {COLUMNS} FROM {table} {filter}"))?;
    let rows = stmt.query_map(args, raw)?;
    rows.map(|r| finish(r?)).collect()
}

fn current(conn: &Connection, id: &str) -> DbResult<Option<AssistantRow>> {
    Ok(
        select(conn, "sg_assistants", "WHERE assistant_id = ?1", &[&id])?
            .into_iter()
            .next(),
    )
}

/// Writes `a` into `table` (the current row, or a version), replacing any same key.
fn write(conn: &Connection, table: &str, a: &AssistantRow) -> DbResult<()> {
    conn.execute(
        &format!("INSERT OR REPLACE INTO {table} ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"),
        params![
            a.assistant_id,
            a.graph_id,
            a.name,
            a.description,
            Value::Object(a.config.clone()).to_string(),
            Value::Object(a.context.clone()).to_string(),
            Value::Object(a.metadata.clone()).to_string(),
            a.version,
            a.created_at,
            a.updated_at
        ],
    )?;
    Ok(())
}

impl Assistants for SqliteDb {
    fn insert_assistant(
        &self,
        mut row: AssistantRow,
        if_exists_do_nothing: bool,
    ) -> BoxFuture<'_, DbResult<AssistantRow>> {
        self.call(move |conn| {
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            if let Some(existing) = current(&tx, &row.assistant_id)? {
                if if_exists_do_nothing {
                    return Ok(existing);
                }
                return Err(DbError::Conflict(format!(
                    "assistant {} already exists: use another id, or `if_exists: \"do_nothing\"`",
                    row.assistant_id
                )));
            }
            let now = now_ms();
            (row.version, row.created_at, row.updated_at) = (1, now, now);
            write(&tx, "sg_assistants", &row)?;
            write(&tx, "sg_assistant_versions", &row)?;
            tx.commit()?;
            Ok(row)
        })
    }

    fn get_assistant(&self, assistant_id: String) -> BoxFuture<'_, DbResult<Option<AssistantRow>>> {
        self.call(move |conn| current(conn, &assistant_id))
    }

    fn update_assistant(
        &self,
        assistant_id: String,
        change: AssistantChange,
    ) -> BoxFuture<'_, DbResult<Option<AssistantRow>>> {
        self.call(move |conn| {
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let Some(now) = current(&tx, &assistant_id)? else {
                return Ok(None);
            };
            let last: i32 = tx.query_row(
                "SELECT COALESCE(MAX(version), 0) FROM sg_assistant_versions WHERE assistant_id = ?1",
                [&assistant_id],
                |r| r.get(0),
            )?;
            let next = change.apply(&now, last + 1, now_ms());
            write(&tx, "sg_assistants", &next)?;
            write(&tx, "sg_assistant_versions", &next)?;
            tx.commit()?;
            Ok(Some(next))
        })
    }

    fn delete_assistant(&self, assistant_id: String) -> BoxFuture<'_, DbResult<bool>> {
        self.call(move |conn| {
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            tx.execute(
                "DELETE FROM sg_assistant_versions WHERE assistant_id = ?1",
                [&assistant_id],
            )?;
            let n = tx.execute(
                "DELETE FROM sg_assistants WHERE assistant_id = ?1",
                [&assistant_id],
            )?;
            tx.commit()?;
            Ok(n > 0)
        })
    }

    fn list_assistants(&self) -> BoxFuture<'_, DbResult<Vec<AssistantRow>>> {
        self.call(move |conn| select(conn, "sg_assistants", "", &[]))
    }

    fn assistant_versions(
        &self,
        assistant_id: String,
    ) -> BoxFuture<'_, DbResult<Option<Vec<AssistantRow>>>> {
        self.call(move |conn| {
            if current(conn, &assistant_id)?.is_none() {
                return Ok(None);
            }
            select(
                conn,
                "sg_assistant_versions",
                "WHERE assistant_id = ?1 ORDER BY version DESC",
                &[&assistant_id],
            )
            .map(Some)
        })
    }

    fn set_latest_version(
        &self,
        assistant_id: String,
        version: i32,
    ) -> BoxFuture<'_, DbResult<Option<AssistantRow>>> {
        self.call(move |conn| {
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let Some(now) = current(&tx, &assistant_id)? else {
                return Ok(None);
            };
            let Some(mut chosen) = tx
                .query_row(
                    &format!("SELECT {COLUMNS} FROM sg_assistant_versions WHERE assistant_id = ?1 AND version = ?2"),
                    params![assistant_id, version],
                    raw,
                )
                .optional()?
                .map(finish)
                .transpose()?
            else {
                return Ok(None);
            };
            chosen.created_at = now.created_at;
            chosen.updated_at = now_ms();
            write(&tx, "sg_assistants", &chosen)?;
            tx.commit()?;
            Ok(Some(chosen))
        })
    }
}
