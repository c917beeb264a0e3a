//! What the Studio's data source can fail with; each maps to an HTTP status.

use stategraph::checkpoint::CheckpointError;

/// A failure of a Studio request.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StudioError {
    /// No thread with this id (no checkpoint in its root namespace).
    #[error("thread {thread_id} not found")]
    UnknownThread {
        /// The thread asked for.
        thread_id: String,
    },
    /// The thread has no checkpoint with this id.
    #[error("checkpoint {checkpoint_id} of thread {thread_id} not found")]
    UnknownCheckpoint {
        /// The thread.
        thread_id: String,
        /// The checkpoint asked for.
        checkpoint_id: String,
    },
    /// A query parameter is wrong.
    #[error("bad query parameter {name}: {reason}")]
    BadQuery {
        /// The parameter.
        name: &'static str,
        /// What is wrong with it, and what it takes.
        reason: String,
    },
    /// Reading the saver failed.
    #[error("reading the checkpoints failed")]
    Store(#[from] CheckpointError),
}

impl StudioError {
    /// The HTTP status: 404 for an unknown thread or checkpoint, 400 for a bad
    /// query, 500 when the saver fails.
    pub fn status(&self) -> u16 {
        match self {
            StudioError::UnknownThread { .. } | StudioError::UnknownCheckpoint { .. } => 404,
            StudioError::BadQuery { .. } => 400,
            StudioError::Store(_) => 500,
        }
    }
}
