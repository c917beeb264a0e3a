//! Errors of the checkpoint layer.

use crate::state::CodecError;

/// Loading or saving a checkpoint failed. Each variant names what and where.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointError {
    /// The storage backend failed. Savers live in other crates, so their own error is
    /// carried as the source.
    #[error("{saver} saver: {operation} failed: {source}")]
    Storage {
        /// The saver (`memory`, `sqlite`, `postgres`, ...).
        saver: &'static str,
        /// What it was doing.
        operation: &'static str,
        /// The backend's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    /// Stored bytes are not a valid checkpoint record.
    #[error("{what} is corrupt: {source}")]
    Corrupt {
        /// Which record (thread, checkpoint id, ...).
        what: String,
        /// What the decoder reported.
        #[source]
        source: serde_json::Error,
    },
    /// A stored record decodes but does not hold what it must: an appended value
    /// that is not a list, a write index out of range, ...
    #[error("{what} is invalid: {reason}")]
    Invalid {
        /// Which record (thread, checkpoint id, ...).
        what: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A stored record is larger than the configured limit.
    #[error(
        "{what} is {size} bytes, over the {limit}-byte limit; raise the saver's limit if this is expected"
    )]
    Oversize {
        /// Which record.
        what: String,
        /// Its size.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// A checkpoint of a newer storage format.
    #[error(
        "checkpoint {id} has format version {found}; this version of stategraph reads up to {supported}"
    )]
    UnsupportedFormat {
        /// The checkpoint.
        id: String,
        /// Its format version.
        found: u32,
        /// The newest this build reads.
        supported: u32,
    },
    /// A checkpoint written by another schema version of the state, and no migration.
    #[error(
        "checkpoint {id} was written by state schema {stored}, but the state's schema is now {expected}; register one with `CompileOptions::migration` to load it"
    )]
    SchemaMismatch {
        /// The checkpoint.
        id: String,
        /// Its schema version.
        stored: String,
        /// The current `GraphState::SCHEMA_VERSION`.
        expected: String,
    },
    /// A registered migration rejected a checkpoint.
    #[error("checkpoint {id} (schema {from}) could not be migrated: {reason}")]
    Migration {
        /// The checkpoint.
        id: String,
        /// Its schema version.
        from: String,
        /// The migration's reason.
        reason: String,
    },
    /// A channel value did not decode.
    #[error("checkpoint {id}: {source}")]
    Channel {
        /// The checkpoint.
        id: String,
        /// Which channel and why.
        #[source]
        source: CodecError,
    },
    /// The values needed to restore a channel are missing.
    #[error("checkpoint {id}: channel `{channel}` version {version} is missing from storage")]
    MissingValue {
        /// The checkpoint.
        id: String,
        /// The channel.
        channel: String,
        /// The missing version.
        version: u64,
    },
    /// A stored task or node is not part of this graph.
    #[error("checkpoint {id} refers to node `{node}`, which this graph does not have")]
    UnknownNode {
        /// The checkpoint.
        id: String,
        /// The node.
        node: String,
    },
    /// Another run holds the thread (one writer per thread), and did not let go in time.
    #[error(
        "thread `{thread_id}` is busy: another run (in this or another process) is writing to it and did not finish within {waited:?}; wait for that run to end, or let this one wait longer with `RunConfig::lock_timeout`"
    )]
    ThreadBusy {
        /// The thread.
        thread_id: String,
        /// How long this run waited.
        waited: std::time::Duration,
    },
    /// The run's [`RunLease`](crate::RunLease) lapsed: this attempt of the run stops
    /// without saving or starting another step, because another worker may hold the
    /// run now.
    #[error(
        "thread `{thread_id}`: the run's lease lapsed {lapsed:?} ago, so this attempt stopped without saving; renew the lease more often than it lasts (another worker may have taken the run over)"
    )]
    LeaseLapsed {
        /// The thread.
        thread_id: String,
        /// How long ago the lease ran out.
        lapsed: std::time::Duration,
    },
    /// A saved pending write this graph cannot use: an unknown kind of write, an
    /// update of a channel the state does not have, or a malformed destination. It
    /// is never skipped, so no task's output is silently lost.
    #[error(
        "thread `{thread}`, checkpoint {checkpoint}, task `{task}`: saved write `{channel}` is unusable: {reason}; the stored row was damaged or written by another program"
    )]
    InvalidWrite {
        /// The thread.
        thread: String,
        /// The checkpoint the write belongs to.
        checkpoint: String,
        /// The task that wrote it.
        task: String,
        /// The write's channel (its kind: `update`, `goto`, `send`, or the unknown name).
        channel: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A `Send` payload could not be stored or restored.
    #[error("payload of a Send to `{node}`: {reason}")]
    Payload {
        /// The target node.
        node: String,
        /// Why.
        reason: String,
    },
}

/// The result of a saver operation.
pub type SaverResult<T> = Result<T, CheckpointError>;
