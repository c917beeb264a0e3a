//! What can go wrong, and the exit code each failure gives.

use std::path::PathBuf;

use stategraph::checkpoint::CheckpointError;

/// The process exit codes of `stategraph`. Scripts can rely on them.
pub mod exit {
    /// Success.
    pub const OK: u8 = 0;
    /// Any other failure: the store could not be read, a record is corrupt, output
    /// could not be written.
    pub const FAILURE: u8 = 1;
    /// The command line is wrong (unknown flag, missing argument); set by the
    /// argument parser.
    pub const USAGE: u8 = 2;
    /// The `--db` file does not exist or is not a stategraph database, or the
    /// `--url` database (or `--schema`) has no stategraph tables.
    pub const MISSING_DATABASE: u8 = 3;
    /// The `--url` is malformed, or the server cannot be reached or refuses the login,
    /// or this build has no PostgreSQL support.
    pub const BAD_URL: u8 = 4;
    /// The store has no thread with that id.
    pub const UNKNOWN_THREAD: u8 = 5;
    /// The thread has no checkpoint by that name, or the name fits several.
    pub const UNKNOWN_CHECKPOINT: u8 = 6;
    /// `delete` was not confirmed: no terminal to ask on and no `--yes`, or the
    /// answer was no.
    pub const NOT_CONFIRMED: u8 = 7;
    /// `store get` or `store rm` of an item the store does not hold.
    pub const UNKNOWN_ITEM: u8 = 8;
}

/// A failure of a `stategraph` command. Each message names what failed and how to go
/// on; [`CliError::exit_code`] gives the process exit code.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CliError {
    /// `--db` names a file that does not exist.
    #[error(
        "database file {} does not exist; pass the path of a SQLite file a stategraph SqliteSaver wrote (nothing was created)",
        .path.display()
    )]
    MissingDatabase {
        /// The path given.
        path: PathBuf,
    },
    /// The file or database has no store tables (`store` commands).
    #[error(
        "{target} has no stategraph store tables (nothing was created); pass the SQLite file or PostgreSQL database (and --schema) a SqliteStore or PostgresStore wrote"
    )]
    NoStoreTables {
        /// The store, as the user named it (without the password).
        target: String,
    },
    /// `store search --filter` is not a filter.
    #[error(
        "bad --filter {filter}: {reason}; write a JSON object of field paths and values or operators, e.g. '{{\"status\": \"open\", \"score\": {{\"$gte\": 3}}}}'"
    )]
    BadFilter {
        /// The filter as given.
        filter: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A namespace or key the store refuses.
    #[error("{source}; write a namespace as labels separated by `/`, e.g. users/u-42")]
    BadNamespace {
        /// The store's validation error.
        #[source]
        source: stategraph::store::StoreError,
    },
    /// No item at this namespace and key.
    #[error(
        "no item `{key}` in namespace {namespace} of {target}; run `stategraph store search {namespace}` to list its items"
    )]
    UnknownItem {
        /// The namespace asked for, as given.
        namespace: String,
        /// The key asked for.
        key: String,
        /// The store, as the user named it.
        target: String,
    },
    /// Opening, reading or changing the store failed.
    #[error("{}", chain(source))]
    StoreFailed {
        /// The store's error.
        #[source]
        source: stategraph::store::StoreError,
    },
    /// `--db` names something that is not a stategraph SQLite database.
    #[error("{} is not a stategraph database: {reason}", .path.display())]
    NotADatabase {
        /// The path given.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The PostgreSQL database (or the schema given) has no saver tables.
    #[error(
        "{target} has no stategraph tables (nothing was created); check the database in the URL and the --schema the saver used"
    )]
    NoTables {
        /// The database, as the user named it (without the password).
        target: String,
    },
    /// The PostgreSQL URL is malformed or the server cannot be used.
    #[error("{source}")]
    BadUrl {
        /// The saver's error, which names the target (never the password).
        #[source]
        source: CheckpointError,
    },
    /// No thread with this id.
    #[error(
        "thread `{thread_id}` not found in {target}; run `stategraph threads` to list the stored threads"
    )]
    UnknownThread {
        /// The thread asked for.
        thread_id: String,
        /// The store, as the user named it.
        target: String,
    },
    /// The thread has no checkpoints in the namespace asked for.
    #[error(
        "thread `{thread_id}` has no checkpoints in namespace `{ns}` in {target}; `stategraph namespaces {thread_id}` lists its namespaces"
    )]
    UnknownNamespace {
        /// The thread.
        thread_id: String,
        /// The namespace asked for.
        ns: String,
        /// The store, as the user named it.
        target: String,
    },
    /// The thread has no checkpoint by this name.
    #[error(
        "thread `{thread_id}` has no checkpoint `{checkpoint}`; name one by its id, the short id `stategraph history {thread_id}` shows, a unique prefix or suffix of the id, or @STEP"
    )]
    UnknownCheckpoint {
        /// The thread.
        thread_id: String,
        /// The id, short id, prefix, suffix or `@STEP` asked for.
        checkpoint: String,
    },
    /// A checkpoint name (id prefix or suffix, or `@STEP`) fits several checkpoints.
    #[error(
        "`{name}` names {count} checkpoints of thread `{thread_id}`: {candidates}; give one of these short ids, or more of the id"
    )]
    AmbiguousCheckpoint {
        /// The thread.
        thread_id: String,
        /// The name asked for.
        name: String,
        /// How many checkpoints it fits.
        count: usize,
        /// Each of them: short id, step and time.
        candidates: String,
    },
    /// A PostgreSQL `--url` given to a build without the `postgres` feature.
    #[error(
        "this stategraph was built without PostgreSQL support, so it cannot read {target}; rebuild it with the `postgres` feature (`cargo install stategraph-cli` has it by default), or pass a SQLite file with --db"
    )]
    PostgresDisabled {
        /// The database, as the user named it (without the password).
        target: String,
    },
    /// `delete` or `prune` without `--yes` and without a terminal to ask on.
    #[error(
        "refusing to {action} thread `{thread_id}` without confirmation: there is no terminal to ask on; pass --yes to {action} it"
    )]
    NoTerminal {
        /// The thread (`*` for every thread).
        thread_id: String,
        /// What was not done: `delete` or `prune`.
        action: &'static str,
    },
    /// The user answered no.
    #[error("thread `{thread_id}` was not {action}d")]
    Declined {
        /// The thread (`*` for every thread).
        thread_id: String,
        /// What was not done: `delete` or `prune`.
        action: &'static str,
    },
    /// Reading or changing the store failed.
    #[error("{0}")]
    Store(#[from] CheckpointError),
    /// `studio` cannot listen on the address given.
    #[error("cannot listen on {addr}; pass a free local address with --addr, e.g. 127.0.0.1:0")]
    Bind {
        /// The address given.
        addr: String,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// Writing the output or reading the answer failed.
    #[error("cannot {action}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
}

impl CliError {
    /// The process exit code for this failure (see [`exit`]).
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::MissingDatabase { .. }
            | CliError::NotADatabase { .. }
            | CliError::NoTables { .. } => exit::MISSING_DATABASE,
            CliError::BadUrl { .. } | CliError::PostgresDisabled { .. } => exit::BAD_URL,
            CliError::UnknownThread { .. } | CliError::UnknownNamespace { .. } => {
                exit::UNKNOWN_THREAD
            }
            CliError::UnknownCheckpoint { .. } | CliError::AmbiguousCheckpoint { .. } => {
                exit::UNKNOWN_CHECKPOINT
            }
            CliError::NoTerminal { .. } | CliError::Declined { .. } => exit::NOT_CONFIRMED,
            CliError::NoStoreTables { .. } => exit::MISSING_DATABASE,
            CliError::BadFilter { .. } | CliError::BadNamespace { .. } => exit::USAGE,
            CliError::UnknownItem { .. } => exit::UNKNOWN_ITEM,
            CliError::StoreFailed { source } if is_connect_failure(source) => exit::BAD_URL,
            CliError::Store(_)
            | CliError::Io { .. }
            | CliError::StoreFailed { .. }
            | CliError::Bind { .. } => exit::FAILURE,
        }
    }
}

/// `error` and its causes, joined by `: ` (a store's errors leave their causes to
/// their sources).
fn chain(error: &dyn std::error::Error) -> String {
    let mut out = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        out.push_str(": ");
        out.push_str(&cause.to_string());
        source = cause.source();
    }
    out
}

/// Whether a store failed to connect (a bad or unreachable URL).
fn is_connect_failure(error: &stategraph::store::StoreError) -> bool {
    matches!(
        error,
        stategraph::store::StoreError::Backend { backend: "postgres", op, .. } if op == "connect"
    )
}
