//! The saver's own failures. They reach callers as the source of
//! `CheckpointError::Storage { saver: "sqlite", .. }`; downcast to [`SqliteError`] to
//! tell them apart.

use std::path::PathBuf;

use stategraph::checkpoint::CheckpointError;
use stategraph::store::StoreError;

/// Why the SQLite saver could not open its database or store a record.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SqliteError {
    /// The database file's directory does not exist.
    #[error(
        "directory {} does not exist; create it before opening a database in it",
        .dir.display()
    )]
    MissingDirectory {
        /// The missing directory.
        dir: PathBuf,
    },
    /// SQLite could not open or read the database file.
    #[error("cannot open {}: {source}", .path.display())]
    Open {
        /// The database file.
        path: PathBuf,
        /// What SQLite reported.
        #[source]
        source: rusqlite::Error,
    },
    /// The database was written by a newer version of this crate.
    #[error(
        "{} holds checkpoint tables of version {found}, newer than version {supported} that this build of stategraph-sqlite knows; upgrade stategraph-sqlite to open it (the file was not modified)",
        .path.display()
    )]
    NewerTables {
        /// The database file.
        path: PathBuf,
        /// The version stored in the database.
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },
    /// The table version stored in the database is not a version number.
    #[error(
        "{} has `schema_version` = {value:?} in table `stategraph_meta`, which is not a version number (a whole number from 1 up); set it to the version of the tables, or open a backup",
        .path.display()
    )]
    BadTableVersion {
        /// The database file.
        path: PathBuf,
        /// The stored value.
        value: String,
    },
    /// The saver's tables are there, but the version they were written at is not.
    #[error(
        "{} holds checkpoint tables but no `schema_version` in table `stategraph_meta`, so this build cannot tell which version they are; restore that row, or open a backup",
        .path.display()
    )]
    MissingTableVersion {
        /// The database file.
        path: PathBuf,
    },
    /// The per-thread lock file could not be created or locked.
    #[error(
        "cannot lock thread `{thread_id}` with {}: {source}; check that the directory is writable",
        .path.display()
    )]
    Lock {
        /// The thread.
        thread_id: String,
        /// The lock file.
        path: PathBuf,
        /// What the operating system reported.
        #[source]
        source: std::io::Error,
    },
    /// The store's tables were written by a newer version of this crate.
    #[error(
        "{} holds store tables of version {found}, newer than version {supported} that this build of stategraph-sqlite knows; upgrade stategraph-sqlite to open it (the file was not modified)",
        .path.display()
    )]
    NewerStoreTables {
        /// The database file.
        path: PathBuf,
        /// The version stored in the database.
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },
    /// The store's table version in the database is not a version number.
    #[error(
        "{} has `store_schema_version` = {value:?} in table `stategraph_meta`, which is not a version number (a whole number from 1 up); set it to the version of the store's tables, or open a backup",
        .path.display()
    )]
    BadStoreTableVersion {
        /// The database file.
        path: PathBuf,
        /// The stored value.
        value: String,
    },
    /// The store's tables are there, but the version they were written at is not.
    #[error(
        "{} holds store tables but no `store_schema_version` in table `stategraph_meta`, so this build cannot tell which version they are; restore that row, or open a backup",
        .path.display()
    )]
    MissingStoreTableVersion {
        /// The database file.
        path: PathBuf,
    },
    /// A stored item's value is not JSON.
    #[error(
        "item `{key}` in namespace `{namespace}` of {} is not valid JSON; the row was damaged outside the store: delete it, or restore a backup",
        .path.display()
    )]
    CorruptItem {
        /// The database file.
        path: PathBuf,
        /// The item's namespace, labels joined by `.`.
        namespace: String,
        /// The item's key.
        key: String,
        /// What the JSON parser reported.
        #[source]
        source: serde_json::Error,
    },
    /// A channel version is too large for a SQLite integer.
    #[error("channel `{channel}` version {version} is larger than SQLite integers can hold")]
    VersionOutOfRange {
        /// The channel.
        channel: String,
        /// The version.
        version: u64,
    },
}

/// Any failure inside one saver operation, before it is named by the operation.
#[derive(Debug)]
pub(crate) enum Failure {
    Sql(rusqlite::Error),
    Saver(SqliteError),
    Checkpoint(CheckpointError),
}

impl Failure {
    /// Whether another connection held a lock SQLite did not wait for.
    pub(crate) fn is_busy(&self) -> bool {
        let sql = match self {
            Failure::Sql(e) | Failure::Saver(SqliteError::Open { source: e, .. }) => e,
            _ => return false,
        };
        matches!(
            sql.sqlite_error_code(),
            Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
        )
    }

    pub(crate) fn during(self, operation: &'static str) -> CheckpointError {
        let source: Box<dyn std::error::Error + Send + Sync> = match self {
            Failure::Checkpoint(e) => return e,
            Failure::Sql(e) => Box::new(e),
            Failure::Saver(e) => Box::new(e),
        };
        CheckpointError::Storage {
            saver: "sqlite",
            operation,
            source,
        }
    }
}

impl Failure {
    /// The failure as a store error of `op`.
    pub(crate) fn store(self, op: &str) -> StoreError {
        let source: Box<dyn std::error::Error + Send + Sync> = match self {
            Failure::Sql(e) => Box::new(e),
            Failure::Saver(e) => Box::new(e),
            Failure::Checkpoint(e) => Box::new(e),
        };
        StoreError::Backend {
            backend: "sqlite",
            op: op.to_string(),
            source,
        }
    }
}

impl From<rusqlite::Error> for Failure {
    fn from(e: rusqlite::Error) -> Self {
        Failure::Sql(e)
    }
}

impl From<SqliteError> for Failure {
    fn from(e: SqliteError) -> Self {
        Failure::Saver(e)
    }
}

impl From<CheckpointError> for Failure {
    fn from(e: CheckpointError) -> Self {
        Failure::Checkpoint(e)
    }
}
