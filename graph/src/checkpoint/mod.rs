//! Checkpoints: the durable record of a thread, one per superstep, and the storage
//! interface savers implement.

mod by_id;
mod compact;
mod error;
mod kept;
mod lock;
mod memory;
mod namespace;
mod needed;
mod packed;
pub mod record;
mod saver;
mod shape;
mod types;
mod values;
pub mod writes;

pub use error::{CheckpointError, SaverResult};
pub use lock::{LocalThreadLocks, ThreadLock};
pub use memory::InMemorySaver;
pub use needed::{NeededVersions, needed_ranges, needed_values};
pub use saver::CheckpointSaver;
pub use shape::recorded_shape;
pub use types::{
    CHECKPOINT_FORMAT, Checkpoint, CheckpointConfig, CheckpointMetadata, CheckpointSource,
    CheckpointTuple, GRAPH_SHAPE_KEY, ListOptions, PendingWrite, PlannedTask, SaveOp, StepRecord,
    StoredValue, TaskRecord, ThreadInfo, new_checkpoint_id, new_checkpoint_id_at, now_rfc3339,
};
pub use values::{channel_value, channel_values};
