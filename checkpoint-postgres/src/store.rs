//! The saver's operations as SQL on one pooled connection.
//!
//! Values are stored once, in `stategraph_values` at their channel version; a
//! checkpoint row keeps its JSON without them and names the channels it carried, so
//! `get_tuple` can put them back.

use std::collections::BTreeMap;

use deadpool_postgres::{Client, Transaction};
use serde::Serialize;
use serde::de::DeserializeOwned;
use stategraph::cache::{CacheEntry, CacheKey};
use stategraph::checkpoint::record::{
    Place, checkpoint_what, decode_checkpoint_record, decode_record, encode_record, value_what,
};
use stategraph::checkpoint::{
    Checkpoint, CheckpointConfig, CheckpointError, CheckpointMetadata, CheckpointTuple,
    ListOptions, PendingWrite, SaveOp, StoredValue, ThreadInfo, needed_ranges,
};
use tokio_postgres::IsolationLevel;
use tokio_postgres::Row;

use crate::error::{Failure, PostgresError};

type Result<T> = std::result::Result<T, Failure>;

fn version_param(channel: &str, version: u64) -> Result<i64> {
    i64::try_from(version).map_err(|_| {
        PostgresError::VersionOutOfRange {
            channel: channel.to_string(),
            version,
        }
        .into()
    })
}

fn encode<T: Serialize>(value: &T, limit: usize, what: impl Fn() -> String) -> Result<String> {
    Ok(encode_record(value, limit, what)?)
}

/// Decodes the JSON text in column `idx` of `row`.
fn decode<T: DeserializeOwned>(
    row: &Row,
    idx: usize,
    limit: usize,
    what: impl Fn() -> String,
) -> Result<T> {
    let text: &str = row.try_get(idx)?;
    Ok(decode_record(text.as_bytes(), limit, what)?)
}

/// Decodes a checkpoint; one that fails because it is of a newer format says so.
fn decode_checkpoint(row: &Row, idx: usize, limit: usize, what: &str) -> Result<Checkpoint> {
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
    let mut values: BTreeMap<(String, i64), Row> = BTreeMap::new();
    if !wanted.is_empty() {
        let (channels, versions): (Vec<String>, Vec<i64>) = wanted.into_keys().unzip();
        let stmt = tx
            .prepare_cached(
                "SELECT v.channel, v.version, v.value FROM stategraph_values v
                 JOIN unnest($3::text[], $4::bigint[]) AS w(channel, version)
                   ON v.channel = w.channel AND v.version = w.version
                 WHERE v.thread_id = $1 AND v.checkpoint_ns = $2",
            )
            .await?;
        for row in tx
            .query(
                &stmt,
                &[
                    &config.thread_id,
                    &config.checkpoint_ns,
                    &channels,
                    &versions,
                ],
            )
            .await?
        {
            values.insert((row.try_get(0)?, row.try_get(1)?), row);
        }
    }

    let ids: Vec<&str> = stored.iter().map(|s| s.id.as_str()).collect();
    let stmt = tx
        .prepare_cached(
            "SELECT checkpoint_id, task_id, idx, channel, value FROM stategraph_writes
             WHERE thread_id = $1 AND checkpoint_ns = $2 AND checkpoint_id = ANY($3)
             ORDER BY checkpoint_id, task_id, idx",
        )
        .await?;
    let mut writes: BTreeMap<String, Vec<Row>> = BTreeMap::new();
    for row in tx
        .query(&stmt, &[&config.thread_id, &config.checkpoint_ns, &ids])
        .await?
    {
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
            let idx: i64 = row.try_get(2)?;
            // Stored from a u32.
            let idx = u32::try_from(idx).unwrap_or(u32::MAX);
            let value = decode(row, 4, limit, || {
                format!("pending write {idx} of task {task_id} on checkpoint {id} of {place}")
            })?;
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
async fn read_tx(client: &mut Client) -> Result<Transaction<'_>> {
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
                     ORDER BY checkpoint_id DESC LIMIT 1"
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
               AND ($3::text IS NULL OR checkpoint_id < $3::text)
             ORDER BY checkpoint_id DESC"
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

pub(crate) async fn put(
    client: &mut Client,
    limit: usize,
    config: &CheckpointConfig,
    checkpoint: Checkpoint,
    metadata: &CheckpointMetadata,
) -> Result<CheckpointConfig> {
    let tx = client.transaction().await?;
    let stored = put_in(&tx, limit, config, checkpoint, metadata).await?;
    tx.commit().await?;
    Ok(stored)
}

/// Stores every op in one transaction: all or nothing.
pub(crate) async fn put_batch(client: &mut Client, limit: usize, ops: Vec<SaveOp>) -> Result<()> {
    let tx = client.transaction().await?;
    for op in ops {
        match op {
            SaveOp::Checkpoint {
                config,
                checkpoint,
                metadata,
            } => {
                put_in(&tx, limit, &config, checkpoint, &metadata).await?;
            }
            SaveOp::Writes { config, writes } => {
                put_writes_in(&tx, limit, &config, &writes).await?;
            }
        }
    }
    tx.commit().await?;
    Ok(())
}

async fn put_in(
    tx: &Transaction<'_>,
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
        let Some(version) = version else {
            encode(&value, limit, || value_what(&channel, 0, place))?;
            checkpoint.channel_values.insert(channel, value);
            continue;
        };
        value_rows.push((
            version_param(&channel, version)?,
            encode(&value, limit, || value_what(&channel, version, place))?,
            channel.clone(),
        ));
        value_channels.push(channel);
    }
    let checkpoint_json = encode(&checkpoint, limit, || what.clone())?;
    let metadata_json = encode(metadata, limit, || format!("metadata of {what}"))?;
    let value_channels = encode(&value_channels, limit, || format!("value list of {what}"))?;

    if !value_rows.is_empty() {
        let (mut versions, mut jsons, mut channels) = (Vec::new(), Vec::new(), Vec::new());
        for (version, json, channel) in value_rows {
            versions.push(version);
            jsons.push(json);
            channels.push(channel);
        }
        let stmt = tx
            .prepare_cached(
                "INSERT INTO stategraph_values (thread_id, checkpoint_ns, channel, version, value)
                 SELECT $1, $2, c, v, j FROM unnest($3::text[], $4::bigint[], $5::text[]) AS r(c, v, j)
                 ON CONFLICT (thread_id, checkpoint_ns, channel, version)
                 DO UPDATE SET value = excluded.value",
            )
            .await?;
        tx.execute(
            &stmt,
            &[
                &config.thread_id,
                &config.checkpoint_ns,
                &channels,
                &versions,
                &jsons,
            ],
        )
        .await?;
    }
    let stmt = tx
        .prepare_cached(
            "INSERT INTO stategraph_checkpoints
             (thread_id, checkpoint_ns, checkpoint_id, parent_id, checkpoint, value_channels, metadata)
             VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET
               parent_id = excluded.parent_id, checkpoint = excluded.checkpoint,
               value_channels = excluded.value_channels, metadata = excluded.metadata",
        )
        .await?;
    tx.execute(
        &stmt,
        &[
            &config.thread_id,
            &config.checkpoint_ns,
            &checkpoint.id,
            &config.checkpoint_id,
            &checkpoint_json,
            &value_channels,
            &metadata_json,
        ],
    )
    .await?;
    Ok(CheckpointConfig {
        thread_id: config.thread_id.clone(),
        checkpoint_ns: config.checkpoint_ns.clone(),
        checkpoint_id: Some(checkpoint.id),
    })
}

pub(crate) async fn put_writes(
    client: &mut Client,
    limit: usize,
    config: &CheckpointConfig,
    writes: &[PendingWrite],
) -> Result<()> {
    let tx = client.transaction().await?;
    put_writes_in(&tx, limit, config, writes).await?;
    tx.commit().await?;
    Ok(())
}

async fn put_writes_in(
    tx: &Transaction<'_>,
    limit: usize,
    config: &CheckpointConfig,
    writes: &[PendingWrite],
) -> Result<()> {
    let place = Place::of(config);
    let id = config.checkpoint_id.as_deref().unwrap_or_default();
    let mut first = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut last = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for w in writes {
        let json = encode(&w.value, limit, || {
            format!(
                "pending write {} of task {} on checkpoint {id} of {place}",
                w.idx, w.task_id
            )
        })?;
        // A task's own writes are fixed once stored; a special write (an error or an
        // interrupt) is replaced by the task's latest.
        let into = if w.channel.starts_with("__") {
            &mut last
        } else {
            &mut first
        };
        into.0.push(w.task_id.clone());
        into.1.push(i64::from(w.idx));
        into.2.push(w.channel.clone());
        into.3.push(json);
    }
    for (rows, on_conflict) in [
        (&first, "DO NOTHING"),
        (
            &last,
            "DO UPDATE SET channel = excluded.channel, value = excluded.value",
        ),
    ] {
        if rows.0.is_empty() {
            continue;
        }
        let stmt = tx
            .prepare_cached(&format!(
                "INSERT INTO stategraph_writes
                 (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, value)
                 SELECT $1, $2, $3, t, i, c, v
                 FROM unnest($4::text[], $5::bigint[], $6::text[], $7::text[]) AS r(t, i, c, v)
                 ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) {on_conflict}"
            ))
            .await?;
        tx.execute(
            &stmt,
            &[
                &config.thread_id,
                &config.checkpoint_ns,
                &id,
                &rows.0,
                &rows.1,
                &rows.2,
                &rows.3,
            ],
        )
        .await?;
    }
    Ok(())
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

/// The fields of a thread's newest checkpoint and its metadata that
/// `list_threads` reports; the rest of the records is not decoded.
#[derive(serde::Deserialize)]
struct LatestTs {
    ts: String,
}

#[derive(serde::Deserialize)]
struct LatestStep {
    step: i64,
}

/// Per thread: its checkpoint count and its newest checkpoint's row (one per
/// namespace holding that id, hence the de-duplication below).
const THREADS_SQL: &str = "SELECT c.thread_id, g.n, c.checkpoint_id, c.checkpoint, c.metadata
     FROM (SELECT thread_id, COUNT(*) AS n, MAX(checkpoint_id) AS latest
           FROM stategraph_checkpoints GROUP BY thread_id) AS g
     JOIN stategraph_checkpoints AS c
       ON c.thread_id = g.thread_id AND c.checkpoint_id = g.latest
     ORDER BY c.thread_id, c.checkpoint_ns";

pub(crate) async fn list_threads(client: &mut Client, limit: usize) -> Result<Vec<ThreadInfo>> {
    let tx = read_tx(client).await?;
    let stmt = tx.prepare_cached(THREADS_SQL).await?;
    let rows = tx.query(&stmt, &[]).await?;
    let mut out: Vec<ThreadInfo> = Vec::new();
    for row in &rows {
        let thread_id: String = row.try_get(0)?;
        if out.last().is_some_and(|t| t.thread_id == thread_id) {
            continue;
        }
        let count: i64 = row.try_get(1)?;
        let id: String = row.try_get(2)?;
        let what = checkpoint_what(
            &id,
            Place {
                thread: &thread_id,
                ns: "",
            },
        );
        let latest: LatestTs = decode(row, 3, limit, || what.clone())?;
        let meta: LatestStep = decode(row, 4, limit, || format!("metadata of {what}"))?;
        out.push(ThreadInfo {
            checkpoint_count: u64::try_from(count).unwrap_or(0),
            latest_checkpoint_id: id,
            latest_step: meta.step,
            latest_ts: latest.ts,
            thread_id,
        });
    }
    tx.commit().await?;
    out.sort_by(|a, b| a.thread_id.cmp(&b.thread_id));
    Ok(out)
}

const TABLES: [&str; 3] = [
    "stategraph_checkpoints",
    "stategraph_writes",
    "stategraph_values",
];

pub(crate) async fn delete_thread(client: &mut Client, thread_id: &str) -> Result<()> {
    let tx = client.transaction().await?;
    for table in TABLES.iter().chain(&["stategraph_cache"]) {
        tx.execute(
            &format!("DELETE FROM {table} WHERE thread_id = $1"),
            &[&thread_id],
        )
        .await?;
    }
    tx.commit().await?;
    Ok(())
}

pub(crate) async fn copy_thread(client: &mut Client, from: &str, to: &str) -> Result<()> {
    if from == to {
        return Ok(());
    }
    let tx = client.transaction().await?;
    for table in TABLES {
        tx.execute(&format!("DELETE FROM {table} WHERE thread_id = $1"), &[&to])
            .await?;
    }
    tx.execute(
        "INSERT INTO stategraph_checkpoints
         (thread_id, checkpoint_ns, checkpoint_id, parent_id, checkpoint, value_channels, metadata)
         SELECT $2, checkpoint_ns, checkpoint_id, parent_id, checkpoint, value_channels, metadata
         FROM stategraph_checkpoints WHERE thread_id = $1",
        &[&from, &to],
    )
    .await?;
    tx.execute(
        "INSERT INTO stategraph_writes
         (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, value)
         SELECT $2, checkpoint_ns, checkpoint_id, task_id, idx, channel, value
         FROM stategraph_writes WHERE thread_id = $1",
        &[&from, &to],
    )
    .await?;
    tx.execute(
        "INSERT INTO stategraph_values (thread_id, checkpoint_ns, channel, version, value)
         SELECT $2, checkpoint_ns, channel, version, value
         FROM stategraph_values WHERE thread_id = $1",
        &[&from, &to],
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

pub(crate) async fn prune(
    client: &mut Client,
    limit: usize,
    thread_id: &str,
    keep: usize,
) -> Result<()> {
    let keep = i64::try_from(keep).unwrap_or(i64::MAX);
    let tx = client.transaction().await?;
    let namespaces: Vec<String> = tx
        .query(
            "SELECT checkpoint_ns FROM stategraph_checkpoints WHERE thread_id = $1
             UNION SELECT checkpoint_ns FROM stategraph_values WHERE thread_id = $1",
            &[&thread_id],
        )
        .await?
        .iter()
        .map(|row| row.try_get(0))
        .collect::<std::result::Result<_, _>>()?;
    for ns in &namespaces {
        let place = Place {
            thread: thread_id,
            ns,
        };
        let dropped = "SELECT checkpoint_id FROM stategraph_checkpoints
             WHERE thread_id = $1 AND checkpoint_ns = $2
             ORDER BY checkpoint_id DESC OFFSET $3";
        tx.execute(
            &format!(
                "DELETE FROM stategraph_writes WHERE thread_id = $1 AND checkpoint_ns = $2
                 AND checkpoint_id IN ({dropped})"
            ),
            &[&thread_id, ns, &keep],
        )
        .await?;
        tx.execute(
            &format!(
                "DELETE FROM stategraph_checkpoints WHERE thread_id = $1 AND checkpoint_ns = $2
                 AND checkpoint_id IN ({dropped})"
            ),
            &[&thread_id, ns, &keep],
        )
        .await?;

        // Per channel, the version ranges the kept checkpoints restore from.
        let mut needed: BTreeMap<String, Vec<(u64, u64)>> = BTreeMap::new();
        let rows = tx
            .query(
                "SELECT checkpoint_id, checkpoint FROM stategraph_checkpoints
                 WHERE thread_id = $1 AND checkpoint_ns = $2",
                &[&thread_id, ns],
            )
            .await?;
        for row in &rows {
            let id: String = row.try_get(0)?;
            let checkpoint = decode_checkpoint(row, 1, limit, &checkpoint_what(&id, place))?;
            for (channel, from, to) in needed_ranges(&checkpoint) {
                needed.entry(channel).or_default().push((from, to));
            }
        }
        for ranges in needed.values_mut() {
            *ranges = merged(std::mem::take(ranges));
        }
        let is_needed = |channel: &str, version: i64| {
            let (Ok(version), Some(ranges)) = (u64::try_from(version), needed.get(channel)) else {
                return false;
            };
            let after = ranges.partition_point(|&(from, _)| from <= version);
            after > 0 && version <= ranges[after - 1].1
        };
        let rows = tx
            .query(
                "SELECT channel, version FROM stategraph_values
                 WHERE thread_id = $1 AND checkpoint_ns = $2",
                &[&thread_id, ns],
            )
            .await?;
        let (mut channels, mut versions) = (Vec::new(), Vec::new());
        for row in &rows {
            let channel: String = row.try_get(0)?;
            let version: i64 = row.try_get(1)?;
            if !is_needed(&channel, version) {
                channels.push(channel);
                versions.push(version);
            }
        }
        if !channels.is_empty() {
            tx.execute(
                "DELETE FROM stategraph_values v
                 USING unnest($3::text[], $4::bigint[]) AS d(channel, version)
                 WHERE v.thread_id = $1 AND v.checkpoint_ns = $2
                   AND v.channel = d.channel AND v.version = d.version",
                &[&thread_id, ns, &channels, &versions],
            )
            .await?;
        }
    }
    tx.commit().await?;
    Ok(())
}

/// Sorted, disjoint ranges covering the same versions as `ranges`.
fn merged(mut ranges: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    ranges.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(ranges.len());
    for (from, to) in ranges {
        match out.last_mut() {
            Some(last) if from <= last.1.saturating_add(1) => last.1 = last.1.max(to),
            _ => out.push((from, to)),
        }
    }
    out
}

fn cache_what(key: &CacheKey) -> String {
    format!(
        "cache entry of node `{}` on thread `{}`",
        key.node, key.thread_id
    )
}

pub(crate) async fn cache_get(
    client: &mut Client,
    limit: usize,
    key: &CacheKey,
) -> Result<Option<CacheEntry>> {
    let stmt = client
        .prepare_cached(
            "SELECT entry FROM stategraph_cache WHERE thread_id = $1 AND node = $2 AND input = $3",
        )
        .await?;
    let row = client
        .query_opt(&stmt, &[&key.thread_id, &key.node, &key.input])
        .await?;
    match row {
        Some(row) => Ok(Some(decode(&row, 0, limit, || cache_what(key))?)),
        None => Ok(None),
    }
}

pub(crate) async fn cache_put(
    client: &mut Client,
    limit: usize,
    key: &CacheKey,
    entry: &CacheEntry,
) -> Result<()> {
    let json = encode(entry, limit, || cache_what(key))?;
    let stmt = client
        .prepare_cached(
            "INSERT INTO stategraph_cache (thread_id, node, input, entry) VALUES ($1, $2, $3, $4)
             ON CONFLICT (thread_id, node, input) DO UPDATE SET entry = excluded.entry",
        )
        .await?;
    client
        .execute(&stmt, &[&key.thread_id, &key.node, &key.input, &json])
        .await?;
    Ok(())
}

pub(crate) async fn cache_clear(
    client: &mut Client,
    thread_id: &str,
    node: Option<&str>,
) -> Result<usize> {
    let removed = client
        .execute(
            "DELETE FROM stategraph_cache WHERE thread_id = $1 AND ($2::text IS NULL OR node = $2)",
            &[&thread_id, &node],
        )
        .await?;
    Ok(usize::try_from(removed).unwrap_or(usize::MAX))
}

#[cfg(test)]
mod tests {
    use super::merged;

    #[test]
    fn merged_ranges_are_sorted_and_disjoint() {
        assert_eq!(
            merged(vec![(5, 7), (1, 2), (3, 3), (6, 9), (12, 12)]),
            [(1, 3), (5, 9), (12, 12)]
        );
        assert!(merged(Vec::new()).is_empty());
    }
}
