//! The saver's operations as SQL on one pooled connection.
//!
//! Values are stored once, in `stategraph_values` at their channel version; a
//! checkpoint row keeps its JSON without them and names the channels it carried, so
//! `get_tuple` can put them back.

use std::collections::BTreeMap;

use deadpool_postgres::{Client, Transaction};
use serde::Serialize;
use serde::de::DeserializeOwned;
use stategraph::checkpoint::record::{
    Place, checkpoint_what, decode_checkpoint_record, decode_record, encode_record, value_what,
    write_index, write_what,
};
use stategraph::checkpoint::{
    Checkpoint, CheckpointConfig, CheckpointError, CheckpointMetadata, CheckpointTuple,
    ListOptions, PendingWrite, StoredValue,
};
use tokio_postgres::IsolationLevel;
use tokio_postgres::Row;

use crate::error::{Failure, PostgresError};

pub(crate) type Result<T> = std::result::Result<T, Failure>;

pub(crate) fn version_param(channel: &str, version: u64) -> Result<i64> {
    i64::try_from(version).map_err(|_| {
        PostgresError::VersionOutOfRange {
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

/// Decodes the JSON text in column `idx` of `row`.
pub(crate) fn decode<T: DeserializeOwned>(
    row: &Row,
    idx: usize,
    limit: usize,
    what: impl Fn() -> String,
) -> Result<T> {
    let text: &str = row.try_get(idx)?;
    Ok(decode_record(text.as_bytes(), limit, what)?)
}

/// Decodes a checkpoint; one that fails because it is of a newer format says so.
pub(crate) fn decode_checkpoint(
    row: &Row,
    idx: usize,
    limit: usize,
    what: &str,
) -> Result<Checkpoint> {
    let text: &str = row.try_get(idx)?;
    Ok(decode_checkpoint_record(text.as_bytes(), limit, what)?)
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
    row: &Row,
    limit: usize,
    place: Place<'_>,
    keep: impl Fn(&CheckpointMetadata) -> bool,
) -> Result<Option<Stored>> {
    let id: String = row.try_get(0)?;
    let what = checkpoint_what(&id, place);
    let metadata: CheckpointMetadata = decode(row, 4, limit, || format!("metadata of {what}"))?;
    if !keep(&metadata) {
        return Ok(None);
    }
    Ok(Some(Stored {
        parent: row.try_get(1)?,
        checkpoint: decode_checkpoint(row, 2, limit, &what)?,
        value_channels: decode(row, 3, limit, || format!("value list of {what}"))?,
        metadata,
        id,
    }))
}

/// Attaches the checkpoints' values and pending writes: one query for all the values,
/// one for all the writes, however many checkpoints there are.
async fn complete(
    tx: &Transaction<'_>,
    limit: usize,
    config: &CheckpointConfig,
    stored: Vec<Stored>,
) -> Result<Vec<CheckpointTuple>> {
    if stored.is_empty() {
        return Ok(Vec::new());
    }
    let place = Place::of(config);

    // Every (channel, version) the checkpoints name, once.
    let mut wanted: BTreeMap<(String, i64), ()> = BTreeMap::new();
    for s in &stored {
        for channel in &s.value_channels {
            let version = s
                .checkpoint
                .channel_versions
                .get(channel)
                .copied()
                .unwrap_or(0);
            wanted.insert((channel.clone(), version_param(channel, version)?), ());
        }
    }
    // The values and the writes are asked for together: one round trip for both.
    let (channels, versions): (Vec<String>, Vec<i64>) = wanted.into_keys().unzip();
    let ids: Vec<&str> = stored.iter().map(|s| s.id.as_str()).collect();
    let value_rows = async {
        if channels.is_empty() {
            return Ok(Vec::new());
        }
        let stmt = tx
            .prepare_cached(
                "SELECT v.channel, v.version, v.value FROM stategraph_values v
                 JOIN unnest($3::text[], $4::bigint[]) AS w(channel, version)
                   ON v.channel = w.channel AND v.version = w.version
                 WHERE v.thread_id = $1 AND v.checkpoint_ns = $2",
            )
            .await?;
        tx.query(
            &stmt,
            &[
                &config.thread_id,
                &config.checkpoint_ns,
                &channels,
                &versions,
            ],
        )
        .await
    };
    let write_rows = async {
        let stmt = tx
            .prepare_cached(
                "SELECT checkpoint_id, task_id, idx, channel, value FROM stategraph_writes
                 WHERE thread_id = $1 AND checkpoint_ns = $2 AND checkpoint_id = ANY($3)
                 ORDER BY checkpoint_id, task_id, idx",
            )
            .await?;
        tx.query(&stmt, &[&config.thread_id, &config.checkpoint_ns, &ids])
            .await
    };
    let (value_rows, write_rows) = futures::try_join!(value_rows, write_rows)?;
    let mut values: BTreeMap<(String, i64), Row> = BTreeMap::new();
    for row in value_rows {
        values.insert((row.try_get(0)?, row.try_get(1)?), row);
    }
    let mut writes: BTreeMap<String, Vec<Row>> = BTreeMap::new();
    for row in write_rows {
        writes.entry(row.try_get(0)?).or_default().push(row);
    }

    let at = |id: String| CheckpointConfig {
        thread_id: config.thread_id.clone(),
        checkpoint_ns: config.checkpoint_ns.clone(),
        checkpoint_id: Some(id),
    };
    let mut out = Vec::with_capacity(stored.len());
    for Stored {
        id,
        parent,
        mut checkpoint,
        value_channels,
        metadata,
    } in stored
    {
        for channel in value_channels {
            let version = checkpoint
                .channel_versions
                .get(&channel)
                .copied()
                .unwrap_or(0);
            let param = version_param(&channel, version)?;
            let key = (channel, param);
            let Some(row) = values.get(&key) else {
                return Err(CheckpointError::MissingValue {
                    id: checkpoint.id.clone(),
                    channel: key.0,
                    version,
                }
                .into());
            };
            let channel = key.0;
            let value: StoredValue =
                decode(row, 2, limit, || value_what(&channel, version, place))?;
            checkpoint.channel_values.insert(channel, value);
        }
        let rows = writes.remove(&id).unwrap_or_default();
        let mut pending_writes = Vec::with_capacity(rows.len());
        for row in &rows {
            let task_id: String = row.try_get(1)?;
            let idx = write_index(row.try_get(2)?, &task_id, &id, place)?;
            let value = decode(row, 4, limit, || write_what(idx, &task_id, &id, place))?;
            pending_writes.push(PendingWrite {
                channel: row.try_get(3)?,
                task_id,
                idx,
                value,
            });
        }
        out.push(CheckpointTuple {
            config: at(id),
            checkpoint,
            metadata,
            parent_config: parent.map(at),
            pending_writes,
        });
    }
    Ok(out)
}

/// A read-only transaction seeing one snapshot of the database.
pub(crate) async fn read_tx(client: &mut Client) -> Result<Transaction<'_>> {
    Ok(client
        .build_transaction()
        .isolation_level(IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await?)
}

pub(crate) async fn get_tuple(
    client: &mut Client,
    limit: usize,
    config: &CheckpointConfig,
) -> Result<Option<CheckpointTuple>> {
    let tx = read_tx(client).await?;
    let place = Place::of(config);
    let row = match &config.checkpoint_id {
        Some(id) => {
            let stmt = tx
                .prepare_cached(&format!(
                    "SELECT {CHECKPOINT_COLUMNS} FROM stategraph_checkpoints
                     WHERE thread_id = $1 AND checkpoint_ns = $2 AND checkpoint_id = $3"
                ))
                .await?;
            tx.query_opt(&stmt, &[&config.thread_id, &config.checkpoint_ns, id])
                .await?
        }
        None => {
            let stmt = tx
                .prepare_cached(&format!(
                    "SELECT {CHECKPOINT_COLUMNS} FROM stategraph_checkpoints
                     WHERE thread_id = $1 AND checkpoint_ns = $2
                     ORDER BY seq DESC, checkpoint_id DESC LIMIT 1"
                ))
                .await?;
            tx.query_opt(&stmt, &[&config.thread_id, &config.checkpoint_ns])
                .await?
        }
    };
    let stored = match row {
        Some(row) => read_stored(&row, limit, place, |_| true)?,
        None => None,
    };
    let out = complete(&tx, limit, config, stored.into_iter().collect())
        .await?
        .pop();
    tx.commit().await?;
    Ok(out)
}

pub(crate) async fn list(
    client: &mut Client,
    limit: usize,
    config: &CheckpointConfig,
    options: &ListOptions,
) -> Result<Vec<CheckpointTuple>> {
    let max = options.limit.unwrap_or(usize::MAX);
    if max == 0 {
        return Ok(Vec::new());
    }
    let tx = read_tx(client).await?;
    let place = Place::of(config);
    let stmt = tx
        .prepare_cached(&format!(
            "SELECT {CHECKPOINT_COLUMNS} FROM stategraph_checkpoints
             WHERE thread_id = $1 AND checkpoint_ns = $2
               AND ($3::text IS NULL OR seq < (SELECT seq FROM stategraph_checkpoints
                   WHERE thread_id = $1 AND checkpoint_ns = $2 AND checkpoint_id = $3::text))
             ORDER BY seq DESC, checkpoint_id DESC"
        ))
        .await?;
    let rows = tx
        .query(
            &stmt,
            &[&config.thread_id, &config.checkpoint_ns, &options.before],
        )
        .await?;
    let mut found = Vec::new();
    for row in &rows {
        if found.len() >= max {
            break;
        }
        if let Some(s) = read_stored(row, limit, place, |m| m.matches(&options.filter))? {
            found.push(s);
        }
    }
    let out = complete(&tx, limit, config, found).await?;
    tx.commit().await?;
    Ok(out)
}

pub(crate) async fn channel_history(
    client: &mut Client,
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
    let stmt = client
        .prepare_cached(
            "SELECT version, value FROM stategraph_values
             WHERE thread_id = $1 AND checkpoint_ns = $2 AND channel = $3
               AND version BETWEEN $4 AND $5
             ORDER BY version",
        )
        .await?;
    let rows = client
        .query(
            &stmt,
            &[
                &config.thread_id,
                &config.checkpoint_ns,
                &channel,
                &from,
                &to,
            ],
        )
        .await?;
    let mut out = Vec::with_capacity(rows.len());
    for row in &rows {
        // Within `from..=to`, so never negative.
        let version = u64::try_from(row.try_get::<_, i64>(0)?).unwrap_or(0);
        out.push((
            version,
            decode(row, 1, limit, || value_what(channel, version, place))?,
        ));
    }
    Ok(out)
}

pub(crate) async fn max_version(
    client: &mut Client,
    config: &CheckpointConfig,
    channel: &str,
) -> Result<Option<u64>> {
    let stmt = client
        .prepare_cached(
            "SELECT MAX(version) FROM stategraph_values
             WHERE thread_id = $1 AND checkpoint_ns = $2 AND channel = $3",
        )
        .await?;
    let row = client
        .query_one(&stmt, &[&config.thread_id, &config.checkpoint_ns, &channel])
        .await?;
    let highest: Option<i64> = row.try_get(0)?;
    Ok(highest.and_then(|v| u64::try_from(v).ok()))
}
