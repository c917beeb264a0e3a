//! The saver's own failures. They reach callers as the source of
//! `CheckpointError::Storage { saver: "postgres", .. }`; downcast to [`PostgresError`]
//! to tell them apart.

use stategraph::checkpoint::CheckpointError;
use stategraph::store::StoreError;

/// Why the PostgreSQL saver could not connect, prepare its tables or store a record.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PostgresError {
    /// The connection URL does not parse.
    #[error(
        "{url:?} is not a PostgreSQL connection URL ({reason}); write it as postgres://user:password@host:5432/database"
    )]
    InvalidUrl {
        /// The URL, with any password removed.
        url: String,
        /// What the parser reported.
        reason: String,
    },
    /// The schema name in [`PostgresOptions::schema`](crate::PostgresOptions::schema)
    /// is not a plain identifier.
    #[error(
        "schema name {name:?} is not a plain identifier; use ASCII letters, digits and `_`, starting with a letter or `_`, at most 63 characters"
    )]
    InvalidSchema {
        /// The rejected name.
        name: String,
    },
    /// The server could not be reached, or refused the login.
    #[error(
        "cannot connect to PostgreSQL at {target}: {reason}; check that the server is running and reachable and that the URL's user, password and database are right"
    )]
    Connect {
        /// Host, port, database and user (never the password).
        target: String,
        /// What the connection attempt reported.
        reason: String,
    },
    /// A network step (opening a connection, its startup handshake, a lock session)
    /// did not finish within the connect timeout.
    #[error(
        "{step} at {target} did not finish within {} s; check that a PostgreSQL server is answering at that address, or allow more time with `connect_timeout` (seconds) in the URL",
        .after.as_secs_f64()
    )]
    Timeout {
        /// What was under way, e.g. "the startup handshake of a new connection".
        step: String,
        /// Host, port, database and user (never the password).
        target: String,
        /// The deadline that passed.
        after: std::time::Duration,
    },
    /// The connection string's `sslmode` is not one of libpq's modes this saver offers.
    #[error(
        "sslmode={value:?} is not a TLS mode this saver knows; use disable, prefer, require, verify-ca or verify-full"
    )]
    InvalidSslMode {
        /// The rejected value.
        value: String,
    },
    /// The CA certificate file (`sslrootcert`, or the options' CA) cannot be used.
    #[error(
        "cannot use the CA certificate {path:?}: {reason}; give a readable PEM file holding the certificate of the CA that signed the server's certificate (sslrootcert=/path in the URL, or PostgresOptions::ca_file)"
    )]
    CaFile {
        /// The file (or a description of the PEM given).
        path: std::path::PathBuf,
        /// What went wrong reading or parsing it.
        reason: String,
    },
    /// No CA was given and the operating system's certificate store has none.
    #[error(
        "no CA certificates found in the system's store ({reason}); give the server's CA with sslrootcert=/path in the URL or PostgresOptions::ca_file"
    )]
    NoSystemRoots {
        /// What loading the store reported.
        reason: String,
    },
    /// The TLS client could not be configured.
    #[error("cannot set up TLS: {reason}")]
    TlsSetup {
        /// What rustls reported.
        reason: String,
    },
    /// The TLS handshake failed, most often because the server's certificate was
    /// refused.
    #[error(
        "TLS with {target} failed under sslmode={mode}: {reason}; if the server's certificate was refused, give the CA that signed it (sslrootcert=/path in the URL, or PostgresOptions::ca_file), and for verify-full connect by a host name the certificate names"
    )]
    Tls {
        /// Host, port, database and user (never the password).
        target: String,
        /// The `sslmode` in force.
        mode: String,
        /// What the TLS client reported.
        reason: String,
    },
    /// The server does not accept TLS, but the `sslmode` requires it.
    #[error(
        "the server at {target} does not accept TLS connections, but sslmode={mode} requires TLS; turn on `ssl` in the server's configuration, or use sslmode=prefer or disable if the network is trusted"
    )]
    TlsUnsupported {
        /// Host, port, database and user (never the password).
        target: String,
        /// The `sslmode` in force.
        mode: String,
    },
    /// The saver's lock service (the thread holding its lock session) could not be
    /// started, or stopped.
    #[error("the PostgreSQL saver's lock service is not running: {reason}")]
    LockService {
        /// What went wrong.
        reason: String,
    },
    /// The lock session failed twice in a row while asking for a thread's lock.
    #[error(
        "the lock session failed: {reason}; check that the server is reachable, and that the lock session does not go through a pooler in transaction mode (see the crate's docs on PgBouncer)"
    )]
    LockSession {
        /// What the session reported.
        reason: String,
    },
    /// A run's lock on its thread was lost (its lock session ended), so another
    /// process may hold the thread now: the run's save was refused.
    #[error(
        "the lock on thread `{thread_id}` was lost ({reason}), so another process may be running it; this save was refused so that two runs never write one thread at once; run the thread again to continue from its last saved checkpoint"
    )]
    LockLost {
        /// The thread.
        thread_id: String,
        /// How the lock was lost.
        reason: String,
    },
    /// A pool given to [`PostgresSaver::from_pool`](crate::PostgresSaver::from_pool)
    /// is too small to keep a lock session and still save.
    #[error(
        "a pool of at most {max_size} connection(s) is too small: the saver keeps one for its thread locks and saves on the others; build the pool with max_size of 2 or more"
    )]
    PoolTooSmall {
        /// The pool's `max_size`.
        max_size: usize,
    },
    /// [`PostgresOptions::schema`](crate::PostgresOptions::schema) was given with a
    /// user's pool, whose connections the saver does not reconfigure.
    #[error(
        "schema {name:?} was set in PostgresOptions, but a saver on a given pool uses its connections' own search_path; set the schema in the pool's configuration (options = '-c search_path={name}') and leave PostgresOptions::schema unset"
    )]
    SchemaWithPool {
        /// The schema named in the options.
        name: String,
    },
    /// A query failed.
    #[error("PostgreSQL query failed: {reason}")]
    Query {
        /// What the server or client reported.
        reason: String,
        /// The client's error.
        #[source]
        source: tokio_postgres::Error,
    },
    /// The database was written by a newer version of this crate.
    #[error(
        "schema `{schema}` holds checkpoint tables of version {found}, newer than version {supported} that this build of stategraph-postgres knows; upgrade stategraph-postgres to use it (nothing was modified)"
    )]
    NewerTables {
        /// The schema holding the tables.
        schema: String,
        /// The version stored in the database.
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },
    /// The table version stored in the database is not a version number.
    #[error(
        "schema `{schema}` has `schema_version` = {value:?} in table `stategraph_meta`, which is not a version number (a whole number from 1 up); set it to the version of the tables, or restore a backup"
    )]
    BadTableVersion {
        /// The schema holding the tables.
        schema: String,
        /// The stored value.
        value: String,
    },
    /// The saver's tables are there, but the version they were written at is not.
    #[error(
        "schema `{schema}` holds checkpoint tables but no `schema_version` in table `stategraph_meta`, so this build cannot tell which version they are; restore that row, or restore a backup"
    )]
    MissingTableVersion {
        /// The schema holding the tables.
        schema: String,
    },
    /// The store's tables were written by a newer version of this crate.
    #[error(
        "schema `{schema}` holds store tables of version {found}, newer than version {supported} that this build of stategraph-postgres knows; upgrade stategraph-postgres to use it (nothing was modified)"
    )]
    NewerStoreTables {
        /// The schema holding the tables.
        schema: String,
        /// The version stored in the database.
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },
    /// The store's table version in the database is not a version number.
    #[error(
        "schema `{schema}` has `store_schema_version` = {value:?} in table `stategraph_meta`, which is not a version number (a whole number from 1 up); set it to the version of the store's tables, or restore a backup"
    )]
    BadStoreTableVersion {
        /// The schema holding the tables.
        schema: String,
        /// The stored value.
        value: String,
    },
    /// The store's tables are there, but the version they were written at is not.
    #[error(
        "schema `{schema}` holds store tables but no `store_schema_version` in table `stategraph_meta`, so this build cannot tell which version they are; restore that row, or restore a backup"
    )]
    MissingStoreTableVersion {
        /// The schema holding the tables.
        schema: String,
    },
    /// A stored item's value is not JSON.
    #[error(
        "item `{key}` in namespace `{namespace}` is not valid JSON; the row was damaged outside the store: delete it, or restore a backup"
    )]
    CorruptItem {
        /// The item's namespace, labels joined by `.`.
        namespace: String,
        /// The item's key.
        key: String,
        /// What the JSON parser reported.
        #[source]
        source: serde_json::Error,
    },
    /// A channel version or write index is too large for a PostgreSQL `bigint`.
    #[error("channel `{channel}` version {version} is larger than PostgreSQL bigints can hold")]
    VersionOutOfRange {
        /// The channel.
        channel: String,
        /// The version.
        version: u64,
    },
    /// The saver was used outside a tokio runtime.
    #[error(
        "the PostgreSQL saver needs a tokio runtime with its I/O and time drivers enabled; run the graph inside one (`#[tokio::main]`, or `invoke_blocking`)"
    )]
    NoRuntime,
}

/// A readable description of a client error, with the server's message when there is
/// one (the client's own `Display` of a server error is just "db error").
pub(crate) fn describe(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return format!("{}: {}", db.severity(), db.message());
    }
    let mut out = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

/// Runs `work`, failing with [`PostgresError::Timeout`] naming `step` when it has not
/// finished after `after`.
pub(crate) async fn within<T>(
    after: std::time::Duration,
    step: impl FnOnce() -> String,
    target: &str,
    work: impl std::future::Future<Output = Result<T, Failure>>,
) -> Result<T, Failure> {
    match tokio::time::timeout(after, work).await {
        Ok(done) => done,
        Err(_) => Err(PostgresError::Timeout {
            step: step(),
            target: target.to_string(),
            after,
        }
        .into()),
    }
}

/// Any failure inside one saver operation, before it is named by the operation.
#[derive(Debug)]
pub(crate) enum Failure {
    Saver(PostgresError),
    Checkpoint(CheckpointError),
}

impl Failure {
    pub(crate) fn during(self, operation: &'static str) -> CheckpointError {
        match self {
            Failure::Checkpoint(e) => e,
            Failure::Saver(e) => CheckpointError::Storage {
                saver: "postgres",
                operation,
                source: Box::new(e),
            },
        }
    }
}

impl Failure {
    /// The failure as a store error of `op`.
    pub(crate) fn store(self, op: &str) -> StoreError {
        let source: Box<dyn std::error::Error + Send + Sync> = match self {
            Failure::Saver(e) => Box::new(e),
            Failure::Checkpoint(e) => Box::new(e),
        };
        StoreError::Backend {
            backend: "postgres",
            op: op.to_string(),
            source,
        }
    }

    /// Whether the server gave up the transaction to break a deadlock or a
    /// serialization conflict: trying it again may succeed.
    pub(crate) fn is_retryable(&self) -> bool {
        use tokio_postgres::error::SqlState;
        match self {
            Failure::Saver(PostgresError::Query { source, .. }) => matches!(
                source.code(),
                Some(code) if *code == SqlState::T_R_DEADLOCK_DETECTED
                    || *code == SqlState::T_R_SERIALIZATION_FAILURE
            ),
            _ => false,
        }
    }
}

impl From<tokio_postgres::Error> for Failure {
    fn from(source: tokio_postgres::Error) -> Self {
        Failure::Saver(PostgresError::Query {
            reason: describe(&source),
            source,
        })
    }
}

impl From<PostgresError> for Failure {
    fn from(e: PostgresError) -> Self {
        Failure::Saver(e)
    }
}

impl From<CheckpointError> for Failure {
    fn from(e: CheckpointError) -> Self {
        Failure::Checkpoint(e)
    }
}
