//! The saver's operations as blocking SQL on one connection.
//!
//! Values are stored once, in `stategraph_values` at their channel version; a
//! checkpoint row keeps its JSON without them and names the channels it carried, so
//! `get_tuple` can put them back.

use rusqlite::types::ValueRef;
use rusqlite::{Connection, Row, ToSql, Transaction, TransactionBehavior};
use serde::Serialize;
use serde::de::DeserializeOwned;
use stategraph::checkpoint::{
    Checkpoint, CheckpointConfig, CheckpointError, CheckpointMetadata, CheckpointTuple,
    ListOptions, PendingWrite, SaveOp, StoredValue,
};

use stategraph::checkpoint::record::{
    Place, checkpoint_what, decode_checkpoint_record, decode_record, encode_record, value_what,
    write_index, write_what,
};

use crate::error::{Failure, SqliteError};

pub(crate) type Result<T> = std::result::Result<T, Failure>;

fn version_param(channel: &str, version: u64) -> Result<i64> {
    i64::try_from(version).map_err(|_| {
        SqliteError::VersionOutOfRange {
            channel: channel.to_string(),
            version,
        }
        .into()
    })
}

pub(crate) fn encode<T: Serialize>(
    value: &T,
    limit: usize,
    what: impl Fn() -> String,
) -> Result<String> {
    Ok(encode_record(value, limit, what)?)
}

/// The JSON text in column `idx` of `row`, without copying it out of SQLite. A number
/// is given as its text, so decoding it gives serde's own "invalid type" error.
fn column_text<'r>(row: &'r Row<'_>, idx: usize, number: &'r mut String) -> Result<&'r [u8]> {
    Ok(match row.get_ref(idx)? {
        ValueRef::Text(b) | ValueRef::Blob(b) => b,
        ValueRef::Null => b"null",
        ValueRef::Integer(i) => {
            *number = i.to_string();
            number.as_bytes()
        }
        ValueRef::Real(r) => {
            *number = r.to_string();
            number.as_bytes()
        }
    })
}

/// Decodes the JSON in column `idx` of `row`.
pub(crate) fn decode<T: DeserializeOwned>(
    row: &Row<'_>,
    idx: usize,
    limit: usize,
    what: impl Fn() -> String,
) -> Result<T> {
    let mut number = String::new();
    Ok(decode_record(
        column_text(row, idx, &mut number)?,
        limit,
        what,
    )?)
}

/// Decodes a checkpoint; one that fails because it is of a newer format says so.
pub(crate) fn decode_checkpoint(
    row: &Row<'_>,
    idx: usize,
    limit: usize,
    what: &str,
) -> Result<Checkpoint> {
    let mut number = String::new();
    Ok(decode_checkpoint_record(
        column_text(row, idx, &mut number)?,
        limit,
        what,
    )?)
}

/// A checkpoint row, decoded, before its values and writes are attached.
struct Stored {
    id: String,
    parent: Option<String>,
    checkpoint: Checkpoint,
    value_channels: Vec<String>,
    metadata: CheckpointMetadata,
}

const CHECKPOINT_COLUMNS: &str = "checkpoint_id, parent_id, checkpoint, value_channels, metadata";

/// Decodes a row of [`CHECKPOINT_COLUMNS`]; the metadata first, so `keep` can skip a
/// checkpoint without decoding it.
fn read_stored(
    row: &Row<'_>,
    limit: usize,
    place: Place<'_>,
    keep: impl Fn(&CheckpointMetadata) -> bool,
) -> Result<Option<Stored>> {
    let id: String = row.get(0)?;
    let what = checkpoint_what(&id, place);
    let metadata: CheckpointMetadata = decode(row, 4, limit, || format!("metadata of {what}"))?;
    if !keep(&metadata) {
        return Ok(None);
    }
    Ok(Some(Stored {
        parent: row.get(1)?,
        checkpoint: decode_checkpoint(row, 2, limit, &what)?,
        value_channels: decode(row, 3, limit, || format!("value list of {what}"))?,
        metadata,
        id,
    }))
}

/// Attaches the checkpoint's values and pending writes.
fn complete(
    conn: &Connection,
    limit: usize,
    config: &CheckpointConfig,
    stored: Stored,
) -> Result<CheckpointTuple> {
    let place = Place::of(config);
    let Stored {
        id,
        parent,
        mut checkpoint,
        value_channels,
        metadata,
    } = stored;
    let mut values = conn.prepare_cached(
        "SELECT value FROM stategraph_values
         WHERE thread_id = ?1 AND checkpoint_ns = ?2 AND channel = ?3 AND version = ?4",
    )?;
    for channel in value_channels {
        let version = checkpoint
            .channel_versions
            .get(&channel)
            .copied()
            .unwrap_or(0);
        let param = version_param(&channel, version)?;
        let mut rows = values.query((&config.thread_id, &config.checkpoint_ns, &channel, param))?;
        let Some(row) = rows.next()? else {
            return Err(CheckpointError::MissingValue {
                id: checkpoint.id.clone(),
                channel,
                version,
            }
            .into());
        };
        let value: StoredValue = decode(row, 0, limit, || value_what(&channel, version, place))?;
        checkpoint.channel_values.insert(channel, value);
    }

    let mut writes = conn.prepare_cached(
        "SELECT task_id, idx, channel, value FROM stategraph_writes
         WHERE thread_id = ?1 AND checkpoint_ns = ?2 AND checkpoint_id = ?3
         ORDER BY task_id, idx",
    )?;
    let mut rows = writes.query((&config.thread_id, &config.checkpoint_ns, &id))?;
    let mut pending_writes = Vec::new();
    while let Some(row) = rows.next()? {
        let task_id: String = row.get(0)?;
        let idx = write_index(row.get(1)?, &task_id, &id, place)?;
        let value = decode(row, 3, limit, || write_what(idx, &task_id, &id, place))?;
        pending_writes.push(PendingWrite {
            channel: row.get(2)?,
            task_id,
            idx,
            value,
        });
    }

    let at = |id: String| CheckpointConfig {
        thread_id: config.thread_id.clone(),
        checkpoint_ns: config.checkpoint_ns.clone(),
        checkpoint_id: Some(id),
    };
    Ok(CheckpointTuple {
        config: at(id),
        checkpoint,
        metadata,
        parent_config: parent.map(at),
        pending_writes,
    })
}

pub(crate) fn read_tx(conn: &mut Connection) -> Result<Transaction<'_>> {
    Ok(conn.transaction_with_behavior(TransactionBehavior::Deferred)?)
}

pub(crate) fn write_tx(conn: &mut Connection) -> Result<Transaction<'_>> {
    Ok(conn.transaction_with_behavior(TransactionBehavior::Immediate)?)
}

pub(crate) fn get_tuple(
    conn: &mut Connection,
    limit: usize,
    config: &CheckpointConfig,
) -> Result<Option<CheckpointTuple>> {
    let tx = read_tx(conn)?;
    let place = Place::of(config);
    let (sql, params): (String, Vec<&dyn ToSql>) = match &config.checkpoint_id {
        Some(id) => (
            format!(
                "SELECT {CHECKPOINT_COLUMNS} FROM stategraph_checkpoints
                 WHERE thread_id = ?1 AND checkpoint_ns = ?2 AND checkpoint_id = ?3"
            ),
            vec![&config.thread_id, &config.checkpoint_ns, id],
        ),
        None => (
            format!(
                "SELECT {CHECKPOINT_COLUMNS} FROM stategraph_checkpoints
                 WHERE thread_id = ?1 AND checkpoint_ns = ?2
                 ORDER BY seq DESC LIMIT 1"
            ),
            vec![&config.thread_id, &config.checkpoint_ns],
        ),
    };
    let stored = {
        let mut stmt = tx.prepare_cached(&sql)?;
        let mut rows = stmt.query(params.as_slice())?;
        match rows.next()? {
            Some(row) => read_stored(row, limit, place, |_| true)?,
            None => None,
        }
    };
    stored.map(|s| complete(&tx, limit, config, s)).transpose()
}

pub(crate) fn list(
    conn: &mut Connection,
    limit: usize,
    config: &CheckpointConfig,
    options: &ListOptions,
) -> Result<Vec<CheckpointTuple>> {
    let max = options.limit.unwrap_or(usize::MAX);
    if max == 0 {
        return Ok(Vec::new());
    }
    let tx = read_tx(conn)?;
    let place = Place::of(config);
    let mut found = Vec::new();
    {
        let mut stmt = tx.prepare_cached(&format!(
            "SELECT {CHECKPOINT_COLUMNS} FROM stategraph_checkpoints
             WHERE thread_id = ?1 AND checkpoint_ns = ?2
               AND (?3 IS NULL OR seq < (SELECT seq FROM stategraph_checkpoints
                   WHERE thread_id = ?1 AND checkpoint_ns = ?2 AND checkpoint_id = ?3))
             ORDER BY seq DESC"
        ))?;
        let mut rows = stmt.query((&config.thread_id, &config.checkpoint_ns, &options.before))?;
        while found.len() < max
            && let Some(row) = rows.next()?
        {
            if let Some(s) = read_stored(row, limit, place, |m| m.matches(&options.filter))? {
                found.push(s);
            }
        }
    }
    found
        .into_iter()
        .map(|s| complete(&tx, limit, config, s))
        .collect()
}

/// Stores every op in one transaction: all or nothing.
pub(crate) fn put_batch(conn: &mut Connection, limit: usize, ops: Vec<SaveOp>) -> Result<()> {
    let tx = write_tx(conn)?;
    apply(&tx, limit, ops)?;
    tx.commit()?;
    Ok(())
}

/// Applies `ops` in order inside the caller's transaction.
pub(crate) fn apply(tx: &Connection, limit: usize, ops: Vec<SaveOp>) -> Result<()> {
    for op in ops {
        match op {
            SaveOp::Checkpoint {
                config,
                checkpoint,
                metadata,
            } => {
                put_in(tx, limit, &config, checkpoint, &metadata)?;
            }
            SaveOp::Writes { config, writes } => put_writes_in(tx, limit, &config, &writes)?,
        }
    }
    Ok(())
}

fn put_in(
    tx: &Connection,
    limit: usize,
    config: &CheckpointConfig,
    mut checkpoint: Checkpoint,
    metadata: &CheckpointMetadata,
) -> Result<CheckpointConfig> {
    let place = Place::of(config);
    let what = checkpoint_what(&checkpoint.id, place);
    let mut value_rows = Vec::new();
    // A value of a channel with no version stays inline: there is no version to find
    // it at again.
    let values = std::mem::take(&mut checkpoint.channel_values);
    let mut value_channels = Vec::new();
    for (channel, value) in values {
        let version = checkpoint.channel_versions.get(&channel).copied();
        value_rows.push((
            version_param(&channel, version.unwrap_or(0))?,
            encode(&value, limit, || {
                value_what(&channel, version.unwrap_or(0), place)
            })?,
            channel.clone(),
        ));
        match version {
            Some(_) => value_channels.push(channel),
            None => {
                checkpoint.channel_values.insert(channel, value);
            }
        }
    }
    let checkpoint_json = encode(&checkpoint, limit, || what.clone())?;
    let metadata_json = encode(metadata, limit, || format!("metadata of {what}"))?;
    let value_channels = encode(&value_channels, limit, || format!("value list of {what}"))?;
    {
        let mut insert_value = tx.prepare_cached(
            "INSERT OR REPLACE INTO stategraph_values
             (thread_id, checkpoint_ns, channel, version, value) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?;
        for (version, json, channel) in &value_rows {
            insert_value.execute((
                &config.thread_id,
                &config.checkpoint_ns,
                channel,
                version,
                json,
            ))?;
        }
        // The next number of the thread's order; a checkpoint stored again keeps its
        // own. The caller holds the thread, so no other writer takes the same number.
        tx.prepare_cached(
            "INSERT INTO stategraph_checkpoints
             (thread_id, checkpoint_ns, checkpoint_id, parent_id, checkpoint, value_channels,
              metadata, seq)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7,
                 (SELECT COALESCE(MAX(seq), 0) + 1 FROM stategraph_checkpoints
                  WHERE thread_id = ?1 AND checkpoint_ns = ?2))
             ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET
                 parent_id = excluded.parent_id, checkpoint = excluded.checkpoint,
                 value_channels = excluded.value_channels, metadata = excluded.metadata",
        )?
        .execute((
            &config.thread_id,
            &config.checkpoint_ns,
            &checkpoint.id,
            &config.checkpoint_id,
            &checkpoint_json,
            &value_channels,
            &metadata_json,
        ))?;
    }
    Ok(CheckpointConfig {
        thread_id: config.thread_id.clone(),
        checkpoint_ns: config.checkpoint_ns.clone(),
        checkpoint_id: Some(checkpoint.id),
    })
}

fn put_writes_in(
    tx: &Connection,
    limit: usize,
    config: &CheckpointConfig,
    writes: &[PendingWrite],
) -> Result<()> {
    let place = Place::of(config);
    let id = config.checkpoint_id.as_deref().unwrap_or_default();
    let encoded = writes
        .iter()
        .map(|w| {
            encode(&w.value, limit, || {
                format!(
                    "pending write {} of task {} on checkpoint {id} of {place}",
                    w.idx, w.task_id
                )
            })
        })
        .collect::<Result<Vec<_>>>()?;
    {
        // A task's own writes are fixed once stored; a special write (an error or an
        // interrupt) is replaced by the task's latest.
        let mut keep_first = tx.prepare_cached(
            "INSERT OR IGNORE INTO stategraph_writes
             (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, value)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )?;
        let mut keep_last = tx.prepare_cached(
            "INSERT OR REPLACE INTO stategraph_writes
             (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, value)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )?;
        for (w, json) in writes.iter().zip(&encoded) {
            let insert = if w.is_runtime_record() {
                &mut keep_last
            } else {
                &mut keep_first
            };
            insert.execute((
                &config.thread_id,
                &config.checkpoint_ns,
                id,
                &w.task_id,
                w.idx,
                &w.channel,
                json,
            ))?;
        }
    }
    Ok(())
}

pub(crate) fn channel_history(
    conn: &mut Connection,
    limit: usize,
    config: &CheckpointConfig,
    channel: &str,
    from: u64,
    to: u64,
) -> Result<Vec<(u64, StoredValue)>> {
    let (Ok(from), to) = (i64::try_from(from), i64::try_from(to).unwrap_or(i64::MAX)) else {
        return Ok(Vec::new());
    };
    let place = Place::of(config);
    let mut stmt = conn.prepare_cached(
        "SELECT version, value FROM stategraph_values
         WHERE thread_id = ?1 AND checkpoint_ns = ?2 AND channel = ?3
           AND version BETWEEN ?4 AND ?5
         ORDER BY version",
    )?;
    let mut rows = stmt.query((&config.thread_id, &config.checkpoint_ns, channel, from, to))?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        // Within `from..=to`, so never negative.
        let version = u64::try_from(row.get::<_, i64>(0)?).unwrap_or(0);
        out.push((
            version,
            decode(row, 1, limit, || value_what(channel, version, place))?,
        ));
    }
    Ok(out)
}

pub(crate) fn max_version(
    conn: &mut Connection,
    config: &CheckpointConfig,
    channel: &str,
) -> Result<Option<u64>> {
    let highest: Option<i64> = conn.query_row(
        "SELECT MAX(version) FROM stategraph_values
         WHERE thread_id = ?1 AND checkpoint_ns = ?2 AND channel = ?3",
        (&config.thread_id, &config.checkpoint_ns, channel),
        |row| row.get(0),
    )?;
    Ok(highest.and_then(|v| u64::try_from(v).ok()))
}
