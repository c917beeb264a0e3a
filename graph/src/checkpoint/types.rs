//! Checkpoint data: what a saver stores and returns.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The format version written in [`Checkpoint::v`].
pub const CHECKPOINT_FORMAT: u32 = 1;

/// The [`CheckpointMetadata::extra`] key under which a root-namespace checkpoint
/// records its graph's [`GraphShape`](crate::GraphShape) as JSON text, when its
/// graph version differs from its parent's (see
/// [`recorded_shape`](super::recorded_shape)).
/// [`RunConfig::metadata`](crate::RunConfig::metadata) cannot set it.
pub const GRAPH_SHAPE_KEY: &str = "__graph__";

/// Which thread (and optionally which checkpoint of it) an operation is about.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CheckpointConfig {
    /// The thread.
    pub thread_id: String,
    /// Namespace inside the thread (empty for the root graph).
    #[serde(default)]
    pub checkpoint_ns: String,
    /// A specific checkpoint; `None` means the latest.
    #[serde(default)]
    pub checkpoint_id: Option<String>,
}

impl CheckpointConfig {
    /// The latest checkpoint of `thread_id`.
    pub fn thread(thread_id: impl Into<String>) -> Self {
        Self {
            thread_id: thread_id.into(),
            checkpoint_ns: String::new(),
            checkpoint_id: None,
        }
    }

    /// The same thread, at checkpoint `id`.
    #[must_use]
    pub fn at(mut self, id: impl Into<String>) -> Self {
        self.checkpoint_id = Some(id.into());
        self
    }
}

/// How a checkpoint stores one channel value it changed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum StoredValue {
    /// The whole value.
    Full(Value),
    /// Items appended to the value of the channel's previous version (a JSON array).
    Append(Value),
}

/// A task planned for the next superstep, stored so a resumed run picks it up.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlannedTask {
    /// The node.
    pub node: String,
    /// For a `Send` task, its payload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
}

/// The state of a thread after a superstep (or its input, or an update).
///
/// Holds only the channel values this checkpoint changed; the rest are read from the
/// versions named in `channel_versions` (see [`CheckpointSaver::channel_history`]).
///
/// [`CheckpointSaver::channel_history`]: super::CheckpointSaver::channel_history
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Format version ([`CHECKPOINT_FORMAT`]).
    pub v: u32,
    /// Time-ordered, sortable id.
    pub id: String,
    /// Creation time, RFC 3339 (UTC, milliseconds).
    pub ts: String,
    /// The values of the channels changed since the parent checkpoint, keyed by channel
    /// name, stored at their version in `channel_versions`.
    pub channel_values: BTreeMap<String, StoredValue>,
    /// Every channel's current version (a channel never written is absent: version 0).
    pub channel_versions: BTreeMap<String, u64>,
    /// For each node that ran since the parent checkpoint, the channel versions it had
    /// seen when it ran. Only those nodes are recorded, so a checkpoint's size does not
    /// grow with the number of nodes that ran earlier in the thread; earlier runs are
    /// in the ancestors' entries.
    pub versions_seen: BTreeMap<String, BTreeMap<String, u64>>,
    /// The channels changed by the step that produced this checkpoint.
    pub updated_channels: Vec<String>,
    /// For delta channels, the version holding the last whole value; a restore folds
    /// the deltas of the versions after it.
    #[serde(default)]
    pub channel_bases: BTreeMap<String, u64>,
    /// Tasks of the next superstep.
    #[serde(default)]
    pub next: Vec<PlannedTask>,
    /// Progress of each join (by join index): the sources that ran so far.
    #[serde(default)]
    pub barriers: BTreeMap<usize, Vec<String>>,
    /// The state's `GraphState::SCHEMA_VERSION`. (Shared, like `graph_version`: every
    /// checkpoint of a graph holds the same one.)
    pub schema_version: Arc<str>,
    /// The graph's [`CompiledGraph::graph_version`](crate::CompiledGraph::graph_version)
    /// when the checkpoint was written.
    #[serde(default)]
    pub graph_version: Arc<str>,
}

/// Why a checkpoint was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckpointSource {
    /// The run's input was applied.
    Input,
    /// A superstep finished.
    Loop,
    /// `update_state` wrote to the thread.
    Update,
    /// A run started from an older checkpoint.
    Fork,
}

/// Metadata stored with a checkpoint; `list` filters on it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckpointMetadata {
    /// Why it was written.
    pub source: CheckpointSource,
    /// The superstep: -1 for the input, then 0, 1, ...
    pub step: i64,
    /// Parent checkpoint ids by namespace.
    #[serde(default)]
    pub parents: BTreeMap<String, String>,
    /// The run that wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// What ran since the parent checkpoint: one record per superstep (several with
    /// [`Durability::Exit`](crate::Durability::Exit)); empty for input and update
    /// checkpoints.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<StepRecord>,
    /// Any other keys (run metadata).
    #[serde(flatten)]
    pub extra: serde_json::Map<String, Value>,
}

impl CheckpointMetadata {
    /// Metadata for `source` at `step`.
    pub fn new(source: CheckpointSource, step: i64) -> Self {
        Self {
            source,
            step,
            parents: BTreeMap::new(),
            run_id: None,
            steps: Vec::new(),
            extra: serde_json::Map::new(),
        }
    }

    /// Whether every key of `filter` is present with an equal value.
    pub fn matches(&self, filter: &serde_json::Map<String, Value>) -> bool {
        if filter.is_empty() {
            return true;
        }
        let Ok(Value::Object(me)) = serde_json::to_value(self) else {
            return false;
        };
        filter.iter().all(|(k, v)| me.get(k) == Some(v))
    }
}

/// One superstep of a thread's run history, stored in the metadata of the checkpoint
/// that follows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepRecord {
    /// The superstep.
    pub step: i64,
    /// The channel versions the step's tasks read (a channel never written is absent).
    pub input_versions: BTreeMap<String, u64>,
    /// The step's tasks, in task order.
    pub tasks: Vec<TaskRecord>,
}

/// What one task of a superstep did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// The task id (`{step}:{node}`, or `{step}:{node}:send{k}` for a `Send`).
    pub id: String,
    /// The node.
    pub node: String,
    /// How long the node ran, in microseconds (0 for a task whose writes were reused).
    pub duration_us: u64,
    /// Whether it wrote to the state.
    pub wrote: bool,
    /// Whether its writes were reused from an earlier, interrupted attempt of the step.
    pub resumed: bool,
    /// Whether its writes were served from the node cache instead of running it.
    pub cached: bool,
    /// Where its routers sent the run.
    pub routed_to: Vec<String>,
}

/// A write saved for a task of the step after a checkpoint, before the step
/// finished: what lets a failed or interrupted step resume without re-running tasks
/// that already succeeded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PendingWrite {
    /// The task.
    pub task_id: String,
    /// Position among the task's writes.
    pub idx: u32,
    /// What it is: `update`, `goto`, `send`, or `__error__`.
    pub channel: String,
    /// The encoded value.
    pub value: Value,
}

/// One write of a [`put_batch`](super::CheckpointSaver::put_batch).
// Ops live briefly in a queue and are consumed once; boxing the checkpoint would cost
// an allocation per save to shrink a short-lived `Vec`.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum SaveOp {
    /// A [`put`](super::CheckpointSaver::put).
    Checkpoint {
        /// The parent, as `put` takes it.
        config: CheckpointConfig,
        /// The checkpoint.
        checkpoint: Checkpoint,
        /// Its metadata.
        metadata: CheckpointMetadata,
    },
    /// A [`put_writes`](super::CheckpointSaver::put_writes).
    Writes {
        /// The checkpoint the writes follow.
        config: CheckpointConfig,
        /// The writes.
        writes: Vec<PendingWrite>,
    },
}

/// A checkpoint with everything stored alongside it.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckpointTuple {
    /// Names exactly this checkpoint.
    pub config: CheckpointConfig,
    /// The checkpoint.
    pub checkpoint: Checkpoint,
    /// Its metadata.
    pub metadata: CheckpointMetadata,
    /// The checkpoint it follows, if any.
    pub parent_config: Option<CheckpointConfig>,
    /// Writes of tasks of the next step that finished before the step committed.
    pub pending_writes: Vec<PendingWrite>,
}

/// A summary of one thread, as [`CheckpointSaver::list_threads`] returns it.
///
/// [`CheckpointSaver::list_threads`]: super::CheckpointSaver::list_threads
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadInfo {
    /// The thread.
    pub thread_id: String,
    /// How many checkpoints it has (in every namespace).
    pub checkpoint_count: u64,
    /// Its newest checkpoint: the last stored in its root namespace (or, for a thread
    /// with no root checkpoint, in its first namespace by name).
    pub latest_checkpoint_id: String,
    /// The superstep of the newest checkpoint (its metadata's `step`).
    pub latest_step: i64,
    /// When the newest checkpoint was written (its `ts`, RFC 3339).
    pub latest_ts: String,
}

/// Options of [`CheckpointSaver::list`](super::CheckpointSaver::list).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ListOptions {
    /// Metadata keys that must be equal.
    pub filter: serde_json::Map<String, Value>,
    /// Only checkpoints stored before the one with this id, in the thread's order
    /// (never by comparing ids); none at all when the thread has no such checkpoint.
    pub before: Option<String>,
    /// At most this many.
    pub limit: Option<usize>,
}

impl ListOptions {
    /// No filter, no bound.
    pub fn new() -> Self {
        Self::default()
    }

    /// Requires metadata key `key` to equal `value`.
    #[must_use]
    pub fn filter(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.filter.insert(key.into(), value.into());
        self
    }

    /// Only checkpoints stored before checkpoint `id` (see the `before` field).
    #[must_use]
    pub fn before(mut self, id: impl Into<String>) -> Self {
        self.before = Some(id.into());
        self
    }

    /// At most `n` checkpoints.
    #[must_use]
    pub fn limit(mut self, n: usize) -> Self {
        self.limit = Some(n);
        self
    }
}

static LAST_STAMP: AtomicU64 = AtomicU64::new(0);

/// Microseconds since the Unix epoch (0 before it).
fn micros(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// A new checkpoint id: 16 hex digits of a strictly increasing (per process)
/// microsecond stamp, then 8 random hex digits. Ids of one process sort in creation
/// order, which makes them readable; savers never order a thread's checkpoints by
/// id, since clocks of different processes (or one stepped back) disagree.
pub fn new_checkpoint_id() -> String {
    let now = micros(SystemTime::now());
    let mut prev = LAST_STAMP.load(Ordering::Relaxed);
    let stamp = loop {
        let next = now.max(prev + 1);
        match LAST_STAMP.compare_exchange_weak(prev, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => break next,
            Err(actual) => prev = actual,
        }
    };
    format_id(stamp)
}

/// A checkpoint id as [`new_checkpoint_id`] makes it, but for the clock reading
/// `time`: what a process whose clock is wrong writes. For tests of clock skew; it
/// does not move this process's id stamp.
pub fn new_checkpoint_id_at(time: SystemTime) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    // Distinct within one microsecond: a counter in the low bits of the random part.
    let bump = NEXT.fetch_add(1, Ordering::Relaxed);
    format_id_with(micros(time), bump)
}

fn format_id(stamp: u64) -> String {
    format_id_with(stamp, 0)
}

/// The id of `stamp`, its random part mixed with `salt`.
fn format_id_with(stamp: u64, salt: u64) -> String {
    // The random part: the stamp mixed with a per-process random key (one hasher
    // seed, drawn once), so ids of processes writing one thread at the same
    // microsecond still differ.
    static KEY: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let key = *KEY.get_or_init(|| {
        use std::hash::BuildHasher;
        std::collections::hash_map::RandomState::new().hash_one(std::process::id())
    });
    let random = splitmix64(stamp ^ key ^ salt.rotate_left(32)) >> 32;
    // Written by hand: `format!` costs more than the rest of this function.
    let mut id = String::with_capacity(24);
    let mut hex = |value: u64, digits: u32| {
        for k in (0..digits).rev() {
            let digit = ((value >> (4 * k)) & 0xf) as u32;
            id.push(char::from_digit(digit, 16).unwrap_or('0'));
        }
    };
    hex(stamp, 16);
    hex(random, 8);
    id
}

/// SplitMix64's finalizer: a cheap, well-mixing permutation of 64-bit values.
fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The current time as RFC 3339 (UTC, milliseconds).
pub fn now_rfc3339() -> String {
    rfc3339_millis(SystemTime::now())
}

/// `time` as RFC 3339 (UTC, milliseconds): `2026-11-24T01:58:35.123Z`.
///
/// Everything up to the seconds changes once a second, so it is formatted once a
/// second (per thread) and reused; a checkpoint per superstep would otherwise spend
/// more on its timestamp than on its id.
fn rfc3339_millis(time: SystemTime) -> String {
    thread_local! {
        static SECOND: std::cell::RefCell<(u64, String)> =
            const { std::cell::RefCell::new((u64::MAX, String::new())) };
    }
    let Ok(since_epoch) = time.duration_since(UNIX_EPOCH) else {
        return humantime::format_rfc3339_millis(time).to_string();
    };
    let (secs, millis) = (since_epoch.as_secs(), since_epoch.subsec_millis());
    SECOND.with_borrow_mut(|(cached, prefix)| {
        if *cached != secs {
            // `…:SSZ` without its `Z`.
            let seconds = humantime::format_rfc3339_seconds(time).to_string();
            *prefix = seconds.trim_end_matches('Z').to_string();
            *cached = secs;
        }
        let mut ts = String::with_capacity(prefix.len() + 5);
        ts.push_str(prefix);
        ts.push('.');
        for digit in [millis / 100, millis / 10 % 10, millis % 10] {
            ts.push(char::from_digit(digit, 10).unwrap_or('0'));
        }
        ts.push('Z');
        ts
    })
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    use super::rfc3339_millis;

    #[test]
    fn timestamps_match_humantime_across_seconds() {
        // Within one second (the cached prefix is reused) and across seconds, days
        // and years (it is replaced).
        let starts = [0, 1_700_000_000, 1_735_689_599, 4_102_444_799];
        for start in starts {
            for millis in [0, 1, 9, 10, 99, 100, 999, 1_000, 1_001, 2_500] {
                let t = UNIX_EPOCH + Duration::from_secs(start) + Duration::from_millis(millis);
                assert_eq!(
                    rfc3339_millis(t),
                    humantime::format_rfc3339_millis(t).to_string(),
                    "{start}s + {millis}ms"
                );
            }
        }
        let now = SystemTime::now();
        assert_eq!(
            rfc3339_millis(now),
            humantime::format_rfc3339_millis(now).to_string()
        );
    }
}
