//! Settings of the SQLite saver and store.

use std::time::Duration;

#[cfg(doc)]
use stategraph::checkpoint::CheckpointError;

/// When a committed operation is on disk (SQLite's `synchronous` setting).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Synchronous {
    /// Every operation is flushed to disk before it returns: a checkpoint that was
    /// saved survives a power loss (the default).
    #[default]
    Full,
    /// Flushes only when the write-ahead log is folded into the database: a saved
    /// checkpoint survives a crash of the process, but a power loss or an operating
    /// system crash may roll back the last few. The file is never corrupted. Several
    /// times faster on slow disks.
    Normal,
}

impl Synchronous {
    pub(crate) fn pragma(self) -> &'static str {
        match self {
            Synchronous::Full => "FULL",
            Synchronous::Normal => "NORMAL",
        }
    }
}

/// Settings of a [`SqliteSaver`](crate::SqliteSaver) (and a [`SqliteStore`](crate::SqliteStore)).
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use]
pub struct SqliteOptions {
    pub(crate) busy_timeout: Duration,
    pub(crate) max_record_bytes: usize,
    pub(crate) synchronous: Synchronous,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self {
            busy_timeout: Duration::from_secs(5),
            max_record_bytes: 64 << 20,
            synchronous: Synchronous::Full,
        }
    }
}

impl SqliteOptions {
    /// A 5-second busy timeout, a 64 MiB record limit and [`Synchronous::Full`].
    pub fn new() -> Self {
        Self::default()
    }

    /// When a committed operation is on disk; see [`Synchronous`].
    pub fn synchronous(mut self, mode: Synchronous) -> Self {
        self.synchronous = mode;
        self
    }

    /// How long an operation waits for another connection (in this or another
    /// process) to release its lock before failing with "database is locked".
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }

    /// The largest stored record, in bytes of JSON: a checkpoint, its metadata, one
    /// channel value or one pending write. Larger records are refused when written and
    /// when read, as [`CheckpointError::Oversize`].
    pub fn max_record_bytes(mut self, bytes: usize) -> Self {
        self.max_record_bytes = bytes;
        self
    }
}
