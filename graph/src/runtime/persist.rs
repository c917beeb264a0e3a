//! Turning a run's in-memory state into checkpoints and pending writes, and back.
//!
//! Channel values are stored per version: a whole value, or for delta channels the
//! items appended since the previous stored version. A delta channel stores a whole
//! value again once its length has doubled since its last whole value, so stored
//! bytes stay within about twice the data and a restore reads a bounded range.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

use super::error::RunError;
use crate::checkpoint::{
    CHECKPOINT_FORMAT, CheckpointConfig, CheckpointError, CheckpointSaver, CheckpointTuple,
    PendingWrite, StoredValue,
};
use crate::compile::Graph;
use crate::node::Send;
use crate::node::{Goto, NodeOutput};
use crate::state::{Change, ChangeSet, GraphState, Persistence};

/// Channel `version` of the channel at `index`, 0 when never written.
pub(crate) type Versions = Vec<u64>;

/// Per delta channel: the version and length of its last whole stored value.
pub(crate) type Bases = Vec<Option<(u64, usize)>>;

pub(crate) use crate::checkpoint::writes::{
    IDX_ERROR, IDX_INTERRUPT, IDX_RESUME, WRITE_DONE, WRITE_ERROR, WRITE_GOTO, WRITE_INTERRUPT,
    WRITE_REJECTED, WRITE_RESUME, WRITE_SEND, WRITE_UPDATE,
};

fn channel_err(id: &str) -> impl Fn(crate::state::CodecError) -> RunError + '_ {
    move |source| {
        RunError::Checkpoint(CheckpointError::Channel {
            id: id.to_string(),
            source,
        })
    }
}

/// The values this checkpoint stores: the channels changed since the last one.
pub(crate) fn stored_values<S: GraphState>(
    state: &S,
    changes: &ChangeSet,
    versions: &Versions,
    bases: &mut Bases,
    id: &str,
) -> Result<BTreeMap<String, StoredValue>, RunError> {
    let mut out = BTreeMap::new();
    for (index, change) in changes.iter() {
        let info = &S::CHANNELS[index];
        if info.persistence == Persistence::Untracked {
            continue;
        }
        let version = versions[index];
        let stored = if info.delta {
            let len = state.channel_len(index).unwrap_or(0);
            match (change, bases[index]) {
                (Change::Appended { from }, Some((_, base_len)))
                    if len < base_len.max(1).saturating_mul(2) =>
                {
                    StoredValue::Append(
                        state
                            .encode_channel_since(index, from)
                            .map_err(channel_err(id))?,
                    )
                }
                _ => {
                    bases[index] = Some((version, len));
                    full(state, index, id)?
                }
            }
        } else {
            full(state, index, id)?
        };
        out.insert(info.name.to_string(), stored);
    }
    Ok(out)
}

fn full<S: GraphState>(state: &S, index: usize, id: &str) -> Result<StoredValue, RunError> {
    let value = state.encode_channel(index).map_err(channel_err(id))?;
    Ok(StoredValue::Full(value.unwrap_or(Value::Null)))
}

// Built by inserting: `collect` into a `BTreeMap` first gathers and sorts a `Vec`,
// an extra allocation per checkpoint for maps of a few entries.
pub(crate) fn version_map<S: GraphState>(versions: &Versions) -> BTreeMap<String, u64> {
    let mut map = BTreeMap::new();
    for (c, v) in S::CHANNELS.iter().zip(versions) {
        if *v > 0 {
            map.insert(c.name.to_string(), *v);
        }
    }
    map
}

pub(crate) fn base_map<S: GraphState>(bases: &Bases) -> BTreeMap<String, u64> {
    let mut map = BTreeMap::new();
    for (c, b) in S::CHANNELS.iter().zip(bases) {
        if let Some((v, _)) = b {
            map.insert(c.name.to_string(), *v);
        }
    }
    map
}

/// The state, versions and bases a checkpoint describes.
pub(crate) struct Restored<S> {
    pub(crate) state: S,
    pub(crate) versions: Versions,
    pub(crate) bases: Bases,
    /// Whether the checkpoint was written under an older schema and migrated.
    pub(crate) migrated: bool,
}

/// Restores through a registered migration: every stored channel as JSON, edited by
/// the migration, then decoded into the current state.
async fn restore_migrated<S: GraphState>(
    saver: &dyn CheckpointSaver,
    tuple: &CheckpointTuple,
    migration: &crate::compile::Migration,
) -> Result<Restored<S>, CheckpointError> {
    let cp = &tuple.checkpoint;
    let mut values = serde_json::Map::new();
    for channel in cp.channel_versions.keys() {
        match crate::checkpoint::channel_value(saver, tuple, channel).await {
            Ok(Some(v)) => {
                values.insert(channel.clone(), v);
            }
            // Untracked channels of the old schema have versions but no values.
            Ok(None) | Err(CheckpointError::MissingValue { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    migration(&mut values).map_err(|reason| CheckpointError::Migration {
        id: cp.id.clone(),
        from: cp.schema_version.to_string(),
        reason,
    })?;
    let mut state = S::default();
    let mut versions = vec![0; S::CHANNELS.len()];
    for info in S::CHANNELS {
        versions[info.index] = cp.channel_versions.get(info.name).copied().unwrap_or(0);
        if info.persistence == Persistence::Untracked {
            continue;
        }
        if let Some(value) = values.remove(info.name) {
            state
                .decode_channel(info.index, value)
                .map_err(|source| CheckpointError::Channel {
                    id: cp.id.clone(),
                    source,
                })?;
        }
    }
    Ok(Restored {
        state,
        versions,
        bases: vec![None; S::CHANNELS.len()],
        migrated: true,
    })
}

pub(crate) async fn restore<S: GraphState>(
    saver: &dyn CheckpointSaver,
    tuple: &CheckpointTuple,
    migrations: &std::collections::HashMap<String, crate::compile::Migration>,
) -> Result<Restored<S>, CheckpointError> {
    let cp = &tuple.checkpoint;
    if cp.v > CHECKPOINT_FORMAT {
        return Err(CheckpointError::UnsupportedFormat {
            id: cp.id.clone(),
            found: cp.v,
            supported: CHECKPOINT_FORMAT,
        });
    }
    if *cp.schema_version != *S::SCHEMA_VERSION {
        return match migrations.get(&*cp.schema_version) {
            Some(migration) => restore_migrated(saver, tuple, migration).await,
            None => Err(CheckpointError::SchemaMismatch {
                id: cp.id.clone(),
                stored: cp.schema_version.to_string(),
                expected: S::SCHEMA_VERSION.to_string(),
            }),
        };
    }
    let mut state = S::default();
    let mut versions = vec![0; S::CHANNELS.len()];
    let mut bases: Bases = vec![None; S::CHANNELS.len()];
    for info in S::CHANNELS {
        let Some(&version) = cp.channel_versions.get(info.name) else {
            continue;
        };
        versions[info.index] = version;
        if info.persistence == Persistence::Untracked {
            continue;
        }
        let base = cp.channel_bases.get(info.name).copied().unwrap_or(version);
        let history = saver
            .channel_history(&tuple.config, info.name, base.min(version), version)
            .await?;
        let missing = |v: u64| CheckpointError::MissingValue {
            id: cp.id.clone(),
            channel: info.name.to_string(),
            version: v,
        };
        match history.first() {
            Some((_, StoredValue::Full(_))) => {}
            _ => return Err(missing(base)),
        }
        if history.last().map(|(v, _)| *v) != Some(version) {
            return Err(missing(version));
        }
        let decode_err = |source| CheckpointError::Channel {
            id: cp.id.clone(),
            source,
        };
        for (v, stored) in history {
            match stored {
                StoredValue::Full(value) => {
                    state
                        .decode_channel(info.index, value)
                        .map_err(decode_err)?;
                    if info.delta {
                        bases[info.index] = Some((v, state.channel_len(info.index).unwrap_or(0)));
                    }
                }
                StoredValue::Append(items) => {
                    state
                        .extend_channel(info.index, items)
                        .map_err(decode_err)?;
                }
            }
        }
    }
    Ok(Restored {
        state,
        versions,
        bases,
        migrated: false,
    })
}

/// Encodes a finished task's output as pending writes.
pub(crate) fn encode_output<S: GraphState>(
    g: &Graph<S>,
    task_id: &str,
    out: &NodeOutput<S>,
) -> Result<Vec<PendingWrite>, RunError> {
    let mut writes = Vec::new();
    let mut push = |channel: &str, value: Value| {
        writes.push(PendingWrite {
            task_id: task_id.to_string(),
            idx: u32::try_from(writes.len()).unwrap_or(u32::MAX),
            channel: channel.to_string(),
            value,
        });
    };
    for update in &out.writes {
        let value = S::encode_update(update).map_err(channel_err(task_id))?;
        push(WRITE_UPDATE, value);
    }
    for goto in &out.goto {
        match goto {
            Goto::End => {}
            Goto::Node(name) => push(WRITE_GOTO, json!(&**name)),
            Goto::Send(send) => {
                let payload = encode_payload(g, send)?;
                push(
                    WRITE_SEND,
                    json!({ "node": &*send.node, "payload": payload }),
                );
            }
        }
    }
    if writes.is_empty() {
        writes.push(PendingWrite {
            task_id: task_id.to_string(),
            idx: 0,
            channel: WRITE_DONE.to_string(),
            value: Value::Null,
        });
    }
    Ok(writes)
}

pub(crate) fn encode_payload<S: GraphState>(
    g: &Graph<S>,
    send: &Send<S>,
) -> Result<Value, RunError> {
    let node = send.node.to_string();
    let codec = g
        .index
        .get(&send.node)
        .and_then(|&i| g.nodes[i].payload_codec)
        .ok_or_else(|| {
            RunError::Checkpoint(CheckpointError::Payload {
                node: node.clone(),
                reason: "its payload type does not implement `Serialize` and `Deserialize`, so it cannot be checkpointed".into(),
            })
        })?;
    match (codec.encode)(&*send.payload) {
        Some(Ok(v)) => Ok(v),
        Some(Err(e)) => Err(RunError::Checkpoint(CheckpointError::Payload {
            node,
            reason: e.to_string(),
        })),
        None => Err(RunError::Checkpoint(CheckpointError::Payload {
            node,
            reason: "the payload is not of the node's input type".into(),
        })),
    }
}

pub(crate) fn decode_payload<S: GraphState>(
    g: &Graph<S>,
    id: &str,
    node: &str,
    payload: Value,
) -> Result<(usize, Arc<dyn std::any::Any + std::marker::Send + Sync>), CheckpointError> {
    let index = *g
        .index
        .get(node)
        .ok_or_else(|| CheckpointError::UnknownNode {
            id: id.to_string(),
            node: node.to_string(),
        })?;
    let codec = g.nodes[index]
        .payload_codec
        .ok_or_else(|| CheckpointError::Payload {
            node: node.to_string(),
            reason: "the node's input type cannot be decoded from a checkpoint".into(),
        })?;
    let decoded = (codec.decode)(payload).map_err(|e| CheckpointError::Payload {
        node: node.to_string(),
        reason: e.to_string(),
    })?;
    Ok((index, decoded))
}

/// Rebuilds a task's output from its saved writes (of `thread`'s `checkpoint`). A
/// write it cannot use is an error, never skipped.
pub(crate) fn decode_output<S: GraphState>(
    g: &Graph<S>,
    thread: &str,
    checkpoint: &str,
    writes: &[&PendingWrite],
) -> Result<NodeOutput<S>, CheckpointError> {
    let mut out = NodeOutput::empty();
    for w in writes {
        let invalid = |reason: String| CheckpointError::InvalidWrite {
            thread: thread.to_string(),
            checkpoint: checkpoint.to_string(),
            task: w.task_id.clone(),
            channel: w.channel.clone(),
            reason,
        };
        match w.channel.as_str() {
            WRITE_UPDATE => out.writes.push(
                S::decode_update(w.value.clone()).map_err(|source| invalid(source.to_string()))?,
            ),
            WRITE_GOTO => {
                let name = w.value.as_str().ok_or_else(|| {
                    invalid(format!("a goto must name a node, found {}", w.value))
                })?;
                out.goto.push(Goto::Node(Arc::from(name)));
            }
            WRITE_SEND => {
                let node =
                    w.value.get("node").and_then(Value::as_str).ok_or_else(|| {
                        invalid("a send must name its node in `node`".to_string())
                    })?;
                let payload = w.value.get("payload").cloned().unwrap_or(Value::Null);
                let (index, payload) = decode_payload(g, checkpoint, node, payload)?;
                out.goto.push(Goto::Send(Send::from_parts(
                    g.nodes[index].name.clone(),
                    payload,
                )));
            }
            WRITE_DONE => {}
            _ => {
                return Err(invalid(
                    "not a kind of write stategraph saves (`update`, `goto`, `send`)".to_string(),
                ));
            }
        }
    }
    Ok(out)
}

/// The config naming `thread`'s checkpoint `id`.
pub(crate) fn config_at(thread: &str, id: Option<String>) -> CheckpointConfig {
    config_in(thread, "", id)
}

/// [`config_at`] in namespace `ns`.
pub(crate) fn config_in(thread: &str, ns: &str, id: Option<String>) -> CheckpointConfig {
    CheckpointConfig {
        thread_id: thread.to_string(),
        checkpoint_ns: ns.to_string(),
        checkpoint_id: id,
    }
}
