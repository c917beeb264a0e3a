//! A thread's namespace in the in-memory saver: its checkpoints, pending writes and
//! channel values in their stored forms, and how a save lands in them.

use std::collections::{BTreeMap, HashMap};

use super::by_id::ById;
use super::compact::{Damaged, LongStrings, Names};
use super::kept::KeptValue;
use super::packed::{PackedEntry, PackedWrite};
use super::types::{Checkpoint, CheckpointMetadata, PendingWrite, SaveOp, StoredValue};

/// A thread's namespace: what the saver keeps of it.
#[derive(Clone, Default)]
pub(crate) struct Namespace {
    /// Each checkpoint as one buffer (see [`PackedEntry`]): a kept checkpoint costs
    /// two heap blocks (its id and its buffer) instead of the public types' forty.
    pub(crate) checkpoints: ById<PackedEntry>,
    /// Pending writes by checkpoint, sorted by task id and index.
    pub(crate) writes: ById<Vec<PackedWrite>>,
    /// Stored channel values by channel, then version. (Nested rather than keyed by
    /// `(channel, version)`: a search then compares the channel name once, not at
    /// every key it passes.)
    pub(crate) values: BTreeMap<String, BTreeMap<u64, KeptValue>>,
    /// The long strings of the namespace's writes and values, each held once.
    pub(crate) long: LongStrings,
}

/// Namespaces by thread id, then namespace name.
pub(crate) type Threads = HashMap<String, BTreeMap<String, Namespace>>;

/// The namespace of `thread_id`, created when absent.
pub(crate) fn namespace(
    threads: &mut Threads,
    thread_id: String,
    checkpoint_ns: String,
) -> &mut Namespace {
    threads
        .entry(thread_id)
        .or_default()
        .entry(checkpoint_ns)
        .or_default()
}

/// What a stored checkpoint reads for a value that is not in the namespace's values.
pub(crate) const PLACEHOLDER: StoredValue = StoredValue::Full(serde_json::Value::Null);

/// One save of a batch, apart from the namespace it goes to.
// One at a time, straight from the batch: boxing the checkpoint would cost an
// allocation per save.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Stored {
    /// The checkpoint, its metadata and its parent's id.
    Checkpoint(Checkpoint, CheckpointMetadata, Option<String>),
    /// The checkpoint the writes follow, and the writes.
    Writes(Option<String>, Vec<PendingWrite>),
}

impl Stored {
    /// The save's thread and namespace, and what it stores.
    pub(crate) fn split(op: SaveOp) -> ((String, String), Self) {
        match op {
            SaveOp::Checkpoint {
                config,
                checkpoint,
                metadata,
            } => (
                (config.thread_id, config.checkpoint_ns),
                Self::Checkpoint(checkpoint, metadata, config.checkpoint_id),
            ),
            SaveOp::Writes { config, writes } => (
                (config.thread_id, config.checkpoint_ns),
                Self::Writes(config.checkpoint_id, writes),
            ),
        }
    }

    pub(crate) fn store(self, ns: &mut Namespace, names: &mut Names, scratch: &mut Vec<u8>) {
        match self {
            Self::Checkpoint(checkpoint, metadata, parent) => {
                store_checkpoint(ns, names, scratch, checkpoint, &metadata, parent.as_deref());
            }
            Self::Writes(checkpoint_id, writes) => {
                store_writes(ns, names, scratch, checkpoint_id, &writes);
            }
        }
    }
}

/// Stores a checkpoint. Its versioned channel values move to the namespace's values
/// (where a restore looks them up by version); the checkpoint keeps their names with
/// a mark, filled in again when it is read ([`fill_values`]), so each value is held once. A
/// value with no version stays in the checkpoint.
fn store_checkpoint(
    ns: &mut Namespace,
    names: &mut Names,
    scratch: &mut Vec<u8>,
    mut checkpoint: Checkpoint,
    metadata: &CheckpointMetadata,
    parent: Option<&str>,
) {
    let versions = &checkpoint.channel_versions;
    let packed = PackedEntry::pack(
        scratch,
        names,
        &checkpoint,
        |channel| versions.contains_key(channel),
        metadata,
        parent,
    );
    for (channel, value) in std::mem::take(&mut checkpoint.channel_values) {
        let Some(&version) = checkpoint.channel_versions.get(&channel) else {
            continue;
        };
        let kept = KeptValue::keep(value, scratch, names, &mut ns.long);
        ns.values.entry(channel).or_default().insert(version, kept);
    }
    ns.checkpoints.insert(checkpoint.id, packed);
}

/// Idempotent per (task id, index): a task's own write already stored is kept; a
/// special write (`__`: errors, interrupts) replaces the stored one.
fn store_writes(
    ns: &mut Namespace,
    names: &mut Names,
    scratch: &mut Vec<u8>,
    checkpoint_id: Option<String>,
    writes: &[PendingWrite],
) {
    let slot = ns.writes.get_or_default(checkpoint_id.unwrap_or_default());
    for w in writes {
        let key = (w.task_id.as_str(), w.idx);
        // Stored writes are sorted by key; a damaged one sorts first.
        let found = slot.binary_search_by(|s| match s.key(names) {
            Ok(k) => k.cmp(&key),
            Err(Damaged) => std::cmp::Ordering::Less,
        });
        match found {
            Ok(at) if w.is_runtime_record() => {
                slot[at] = PackedWrite::pack(scratch, names, &mut ns.long, w);
            }
            Ok(_) => {}
            Err(at) => slot.insert(at, PackedWrite::pack(scratch, names, &mut ns.long, w)),
        }
    }
}

/// Fills in the channel values `checkpoint` holds in the namespace's values.
pub(crate) fn fill_values(
    names: &Names,
    ns: &Namespace,
    checkpoint: &mut Checkpoint,
) -> Result<(), Damaged> {
    for (channel, value) in &mut checkpoint.channel_values {
        let found = checkpoint
            .channel_versions
            .get(channel)
            .and_then(|version| ns.values.get(channel)?.get(version));
        if let Some(found) = found {
            *value = found.get(names)?;
        }
    }
    Ok(())
}
