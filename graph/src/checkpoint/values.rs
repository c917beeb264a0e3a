//! Rebuilding a checkpoint's channel values as JSON, without the state type: what
//! tools that inspect stored threads (and restores through a migration) need.

use std::collections::BTreeMap;

use serde_json::Value;

use super::error::CheckpointError;
use super::record::{Place, value_what};
use super::saver::CheckpointSaver;
use super::types::{CheckpointTuple, StoredValue};

/// The JSON value of `channel` at the checkpoint `tuple`, folded from the stored
/// versions it needs: the whole value at the channel's base version, then the items
/// each later version appended ([`StoredValue::Append`]).
///
/// `None` when the checkpoint has no version of the channel, or when no version of it
/// was ever stored (an untracked channel: its value is not persisted). A value kept
/// inline in the checkpoint (a channel without a version) is returned as stored.
///
/// # Errors
/// [`CheckpointError::MissingValue`] when some but not all of the needed versions are
/// stored, or a delta has no whole value to apply to; [`CheckpointError::Invalid`]
/// when a stored delta is not a list or extends a value that is not one; any error of
/// the saver.
///
/// # Example
/// ```
/// use std::collections::BTreeMap;
/// use serde_json::json;
/// use stategraph::checkpoint::{
///     Checkpoint, CheckpointConfig, CheckpointMetadata, CheckpointSaver, CheckpointSource,
///     InMemorySaver, StoredValue, channel_value, new_checkpoint_id, now_rfc3339,
/// };
///
/// # futures::executor::block_on(async {
/// let saver = InMemorySaver::new();
/// // Two checkpoints of a `log` channel: the whole list at version 1, then one item
/// // appended at version 2.
/// let mut config = CheckpointConfig::thread("t");
/// for (version, stored) in [
///     (1, StoredValue::Full(json!(["a"]))),
///     (2, StoredValue::Append(json!(["b"]))),
/// ] {
///     let checkpoint = Checkpoint {
///         v: 1,
///         id: new_checkpoint_id(),
///         ts: now_rfc3339(),
///         channel_values: BTreeMap::from([("log".to_string(), stored)]),
///         channel_versions: BTreeMap::from([("log".to_string(), version)]),
///         versions_seen: BTreeMap::new(),
///         updated_channels: vec!["log".into()],
///         channel_bases: BTreeMap::from([("log".to_string(), 1)]),
///         next: Vec::new(),
///         barriers: BTreeMap::new(),
///         schema_version: "demo".into(),
///         graph_version: "".into(),
///     };
///     let metadata = CheckpointMetadata::new(CheckpointSource::Loop, version as i64);
///     config = saver.put(&config, checkpoint, metadata).await?;
/// }
/// let latest = saver.get_tuple(&CheckpointConfig::thread("t")).await?.unwrap();
/// assert_eq!(channel_value(&saver, &latest, "log").await?, Some(json!(["a", "b"])));
/// assert_eq!(channel_value(&saver, &latest, "other").await?, None);
/// # Ok::<(), stategraph::checkpoint::CheckpointError>(())
/// # }).unwrap();
/// ```
pub async fn channel_value(
    saver: &dyn CheckpointSaver,
    tuple: &CheckpointTuple,
    channel: &str,
) -> Result<Option<Value>, CheckpointError> {
    let cp = &tuple.checkpoint;
    let Some(&version) = cp.channel_versions.get(channel) else {
        return Ok(match cp.channel_values.get(channel) {
            Some(StoredValue::Full(value)) => Some(value.clone()),
            _ => None,
        });
    };
    let base = cp.channel_bases.get(channel).copied().unwrap_or(version);
    let history = saver
        .channel_history(&tuple.config, channel, base.min(version), version)
        .await?;
    if history.is_empty() {
        return Ok(None);
    }
    let missing = |v: u64| CheckpointError::MissingValue {
        id: cp.id.clone(),
        channel: channel.to_string(),
        version: v,
    };
    if history.last().map(|(v, _)| *v) != Some(version) {
        return Err(missing(version));
    }
    let invalid = |v: u64, reason: String| CheckpointError::Invalid {
        what: value_what(channel, v, Place::of(&tuple.config)),
        reason,
    };
    let mut value: Option<Value> = None;
    for (v, stored) in history {
        match (stored, &mut value) {
            (StoredValue::Full(full), _) => value = Some(full),
            (StoredValue::Append(Value::Array(items)), Some(Value::Array(current))) => {
                current.extend(items)
            }
            (StoredValue::Append(Value::Array(_)), Some(other)) => {
                return Err(invalid(
                    v,
                    format!(
                        "it appends items to a value that is not a list ({})",
                        json_kind(other)
                    ),
                ));
            }
            (StoredValue::Append(Value::Array(_)), None) => return Err(missing(v)),
            (StoredValue::Append(other), _) => {
                return Err(invalid(
                    v,
                    format!(
                        "an appended value must be a list of items, found {}",
                        json_kind(&other)
                    ),
                ));
            }
        }
    }
    value.map(Some).ok_or_else(|| missing(base))
}

/// What kind of JSON value `value` is, for messages.
fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Every channel value of the checkpoint `tuple` that storage holds, by channel name,
/// each rebuilt by [`channel_value`]. Untracked channels (never stored) are left out;
/// their versions are still in the checkpoint's `channel_versions`.
///
/// # Errors
/// As [`channel_value`], for the first channel that fails.
///
/// # Example
/// ```
/// use std::sync::Arc;
/// use serde_json::json;
/// use stategraph::checkpoint::{CheckpointConfig, CheckpointSaver, channel_values};
/// use stategraph::prelude::*;
///
/// #[derive(GraphState, Clone, Debug, Default)]
/// struct Counter {
///     count: i64,
///     #[reducer(append)]
///     log: Vec<String>,
/// }
///
/// #[node]
/// fn bump(state: &Counter) -> CounterUpdate {
///     Counter::update().count(state.count + 1).log([format!("bumped to {}", state.count + 1)])
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let saver = Arc::new(InMemorySaver::new());
/// let graph = StateGraph::<Counter>::new()
///     .add_node(bump)
///     .add_edge(START, bump)
///     .compile_with(CompileOptions::new().shared_checkpointer(saver.clone()))?;
/// graph.invoke(Counter::update(), &RunConfig::new().thread("t1")).await?;
///
/// // No `Counter` needed to read the thread back.
/// let latest = saver.get_tuple(&CheckpointConfig::thread("t1")).await?.expect("saved");
/// let values = channel_values(saver.as_ref(), &latest).await?;
/// assert_eq!(values["count"], json!(1));
/// assert_eq!(values["log"], json!(["bumped to 1"]));
/// # Ok(())
/// # }
/// ```
pub async fn channel_values(
    saver: &dyn CheckpointSaver,
    tuple: &CheckpointTuple,
) -> Result<BTreeMap<String, Value>, CheckpointError> {
    let cp = &tuple.checkpoint;
    let mut out = BTreeMap::new();
    let channels = cp
        .channel_versions
        .keys()
        .chain(cp.channel_values.keys())
        .collect::<std::collections::BTreeSet<_>>();
    for channel in channels {
        if let Some(value) = channel_value(saver, tuple, channel).await? {
            out.insert(channel.clone(), value);
        }
    }
    Ok(out)
}
