//! The tables' forward migrations: the saver's, and (in `kv`) the store's.
//!
//! `stategraph_meta` records, under a key of each set of tables, which of its
//! migrations a database has had. Opening a database applies the missing ones in one
//! transaction; a database that has more than this build knows is refused before
//! anything is written to it. Each set is versioned on its own, so a file may hold
//! the checkpoint tables, the store's, or both.

use std::path::Path;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior};

use crate::error::{Failure, SqliteError};

/// Each step moves the tables one version forward; never edit a released step, add one.
const MIGRATIONS: &[&str] = &[
    // Version 1. `checkpoint` is the checkpoint's JSON without the values listed in
    // `value_channels`: those live once in `stategraph_values`, at their version.
    "CREATE TABLE stategraph_checkpoints (
        thread_id      TEXT NOT NULL,
        checkpoint_ns  TEXT NOT NULL,
        checkpoint_id  TEXT NOT NULL,
        parent_id      TEXT,
        checkpoint     TEXT NOT NULL,
        value_channels TEXT NOT NULL,
        metadata       TEXT NOT NULL,
        PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
    );
    CREATE TABLE stategraph_writes (
        thread_id     TEXT NOT NULL,
        checkpoint_ns TEXT NOT NULL,
        checkpoint_id TEXT NOT NULL,
        task_id       TEXT NOT NULL,
        idx           INTEGER NOT NULL,
        channel       TEXT NOT NULL,
        value         TEXT NOT NULL,
        PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
    );
    CREATE TABLE stategraph_values (
        thread_id     TEXT NOT NULL,
        checkpoint_ns TEXT NOT NULL,
        channel       TEXT NOT NULL,
        version       INTEGER NOT NULL,
        value         TEXT NOT NULL,
        PRIMARY KEY (thread_id, checkpoint_ns, channel, version)
    );",
    // Version 2. Node cache entries (`stategraph::cache::CacheEntry` as JSON).
    "CREATE TABLE stategraph_cache (
        thread_id TEXT NOT NULL,
        node      TEXT NOT NULL,
        input     TEXT NOT NULL,
        entry     TEXT NOT NULL,
        PRIMARY KEY (thread_id, node, input)
    );",
    // Version 3. A thread's order: `seq` numbers a namespace's checkpoints in the
    // order they were stored (`put` gives the next one). Ids come from clocks, which
    // disagree between processes, so they must not order a thread. Existing rows are
    // numbered in id order, the order this crate used before.
    "ALTER TABLE stategraph_checkpoints ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
    UPDATE stategraph_checkpoints SET seq = numbered.n
    FROM (SELECT rowid AS row, ROW_NUMBER() OVER (
              PARTITION BY thread_id, checkpoint_ns ORDER BY checkpoint_id) AS n
          FROM stategraph_checkpoints) AS numbered
    WHERE stategraph_checkpoints.rowid = numbered.row;
    CREATE INDEX stategraph_checkpoints_seq
        ON stategraph_checkpoints (thread_id, checkpoint_ns, seq);",
];

/// The version of the tables this build creates and reads, stored as `schema_version`
/// in the `stategraph_meta` table.
pub const TABLE_VERSION: i64 = MIGRATIONS.len() as i64;

/// A set of tables migrated together, with its own version in `stategraph_meta`.
pub(crate) struct Tables {
    /// The `stategraph_meta` key holding the version.
    pub(crate) meta_key: &'static str,
    /// Each step moves the tables one version forward.
    pub(crate) steps: &'static [&'static str],
    /// A table whose presence without a version means the version row was lost.
    pub(crate) marker: &'static str,
    /// The tables are newer than this build knows (found, supported).
    pub(crate) newer: fn(&Path, i64, i64) -> SqliteError,
    /// The stored version is not a version number.
    pub(crate) bad: fn(&Path, String) -> SqliteError,
    /// The tables are there but their version is not.
    pub(crate) missing: fn(&Path) -> SqliteError,
}

impl Tables {
    fn version(&self) -> i64 {
        self.steps.len() as i64
    }
}

/// The saver's tables.
pub(crate) const CHECKPOINT_TABLES: Tables = Tables {
    meta_key: "schema_version",
    steps: MIGRATIONS,
    marker: "stategraph_checkpoints",
    newer: |path, found, supported| SqliteError::NewerTables {
        path: path.to_path_buf(),
        found,
        supported,
    },
    bad: |path, value| SqliteError::BadTableVersion {
        path: path.to_path_buf(),
        value,
    },
    missing: |path| SqliteError::MissingTableVersion {
        path: path.to_path_buf(),
    },
};

/// The tables' version in `conn`: 0 for a database this crate never opened. A
/// database holding the tables without a readable version is refused rather than
/// taken for a new one (which would try to create the tables again).
fn stored_version(conn: &Connection, path: &Path, tables: &Tables) -> Result<i64, Failure> {
    let has = |table: &str| -> Result<bool, Failure> {
        Ok(conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1)",
            [table],
            |row| row.get(0),
        )?)
    };
    let value = if has("stategraph_meta")? {
        conn.query_row(
            "SELECT value FROM stategraph_meta WHERE key = ?1",
            [tables.meta_key],
            |row| {
                Ok(match row.get_ref(0)? {
                    ValueRef::Integer(i) => Ok(i),
                    ValueRef::Text(t) => {
                        let text = String::from_utf8_lossy(t);
                        text.trim().parse::<i64>().map_err(|_| text.into_owned())
                    }
                    other => Err(format!("{other:?}")),
                })
            },
        )
        .optional()?
    } else {
        None
    };
    let bad = |value: String| Err((tables.bad)(path, value).into());
    match value {
        Some(Ok(v)) if v >= 1 => Ok(v),
        Some(Ok(v)) => bad(v.to_string()),
        Some(Err(value)) => bad(value),
        None if has(tables.marker)? => Err((tables.missing)(path).into()),
        None => Ok(0),
    }
}

fn refuse_newer(found: i64, path: &Path, tables: &Tables) -> Result<(), Failure> {
    if found > tables.version() {
        return Err((tables.newer)(path, found, tables.version()).into());
    }
    Ok(())
}

/// Refuses a database with newer tables without writing to it.
pub(crate) fn check(conn: &Connection, path: &Path, tables: &Tables) -> Result<(), Failure> {
    // One read transaction: the version row and the tables are read from one state
    // of the file, not from before and after another process's migration commits.
    let tx = conn.unchecked_transaction()?;
    let found = stored_version(&tx, path, tables)?;
    drop(tx);
    refuse_newer(found, path, tables)
}

/// Brings `tables` up to their newest version.
pub(crate) fn migrate(conn: &mut Connection, path: &Path, tables: &Tables) -> Result<(), Failure> {
    // Immediate: a second process opening the same file waits here, then sees the
    // version this one wrote.
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let found = stored_version(&tx, path, tables)?;
    refuse_newer(found, path, tables)?;
    if found == tables.version() {
        return Ok(());
    }
    tx.execute_batch(
        "CREATE TABLE IF NOT EXISTS stategraph_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    )?;
    let start = usize::try_from(found).unwrap_or(0);
    for step in tables.steps.iter().skip(start) {
        tx.execute_batch(step)?;
    }
    tx.execute(
        "INSERT INTO stategraph_meta (key, value) VALUES (?1, ?2)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (tables.meta_key, tables.version().to_string()),
    )?;
    tx.commit()?;
    Ok(())
}
