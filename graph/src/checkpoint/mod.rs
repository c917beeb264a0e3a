//! Checkpoints: the durable record of a thread, one per superstep, and the storage
//! interface savers implement.

mod error;
mod memory;
mod saver;
mod types;

pub use error::CheckpointError;
pub use memory::{InMemorySaver, needed_ranges, needed_values};
pub use saver::{CheckpointSaver, SaverResult};
pub use types::{
    CHECKPOINT_FORMAT, Checkpoint, CheckpointConfig, CheckpointMetadata, CheckpointSource,
    CheckpointTuple, ListOptions, PendingWrite, PlannedTask, SaveOp, StepRecord, StoredValue,
    TaskRecord, new_checkpoint_id, now_rfc3339,
};
