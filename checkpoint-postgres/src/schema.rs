//! The tables' forward migrations: the saver's, and (in `kv`) the store's.
//!
//! `stategraph_meta` records, under a key of each set of tables, which of its
//! migrations a database has had. Connecting applies the missing ones in one
//! transaction, under a transaction-level advisory lock so that workers starting
//! together migrate once; a database that has more than this build knows is refused
//! before anything is written to it. Each set is versioned on its own, so a schema
//! may hold the checkpoint tables, the store's, or both.

use deadpool_postgres::Client;

use crate::error::{Failure, PostgresError};

/// Each step moves the tables one version forward; never edit a released step, add one.
///
/// Identifiers use the `C` collation so checkpoint ids (time-ordered text) sort by
/// bytes, whatever the database's locale.
const MIGRATIONS: &[&str] = &[
    // Version 1. `checkpoint` is the checkpoint's JSON without the values listed in
    // `value_channels`: those live once in `stategraph_values`, at their version.
    "CREATE TABLE stategraph_checkpoints (
        thread_id      TEXT COLLATE \"C\" NOT NULL,
        checkpoint_ns  TEXT COLLATE \"C\" NOT NULL,
        checkpoint_id  TEXT COLLATE \"C\" NOT NULL,
        parent_id      TEXT COLLATE \"C\",
        checkpoint     TEXT NOT NULL,
        value_channels TEXT NOT NULL,
        metadata       TEXT NOT NULL,
        PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
    );
    CREATE TABLE stategraph_writes (
        thread_id     TEXT COLLATE \"C\" NOT NULL,
        checkpoint_ns TEXT COLLATE \"C\" NOT NULL,
        checkpoint_id TEXT COLLATE \"C\" NOT NULL,
        task_id       TEXT COLLATE \"C\" NOT NULL,
        idx           BIGINT NOT NULL,
        channel       TEXT NOT NULL,
        value         TEXT NOT NULL,
        PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
    );
    CREATE TABLE stategraph_values (
        thread_id     TEXT COLLATE \"C\" NOT NULL,
        checkpoint_ns TEXT COLLATE \"C\" NOT NULL,
        channel       TEXT COLLATE \"C\" NOT NULL,
        version       BIGINT NOT NULL,
        value         TEXT NOT NULL,
        PRIMARY KEY (thread_id, checkpoint_ns, channel, version)
    );",
    // Version 2. Node cache entries (`stategraph::cache::CacheEntry` as JSON).
    "CREATE TABLE stategraph_cache (
        thread_id TEXT COLLATE \"C\" NOT NULL,
        node      TEXT COLLATE \"C\" NOT NULL,
        input     TEXT COLLATE \"C\" NOT NULL,
        entry     TEXT NOT NULL,
        PRIMARY KEY (thread_id, node, input)
    );",
    // Version 3. A thread's order: `seq` numbers a namespace's checkpoints in the
    // order they were stored (`put` gives the next one). Ids come from clocks, which
    // disagree between processes, so they must not order a thread. Existing rows are
    // numbered in id order, the order this crate used before.
    "ALTER TABLE stategraph_checkpoints ADD COLUMN seq BIGINT NOT NULL DEFAULT 0;
    UPDATE stategraph_checkpoints AS c SET seq = numbered.n
    FROM (SELECT thread_id, checkpoint_ns, checkpoint_id, ROW_NUMBER() OVER (
              PARTITION BY thread_id, checkpoint_ns ORDER BY checkpoint_id) AS n
          FROM stategraph_checkpoints) AS numbered
    WHERE c.thread_id = numbered.thread_id AND c.checkpoint_ns = numbered.checkpoint_ns
      AND c.checkpoint_id = numbered.checkpoint_id;
    CREATE INDEX stategraph_checkpoints_seq
        ON stategraph_checkpoints (thread_id, checkpoint_ns, seq);",
    // Version 4. Each thread's fence: a process that takes the thread's advisory lock
    // writes a new one, and its saves check it, so a holder whose lock session was lost
    // cannot write once another process has the thread.
    "CREATE TABLE stategraph_thread_locks (
        thread_id TEXT COLLATE \"C\" PRIMARY KEY,
        fence     UUID NOT NULL
    );",
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
    /// The tables are newer than this build knows (schema, found, supported).
    pub(crate) newer: fn(&str, i64, i64) -> PostgresError,
    /// The stored version is not a version number.
    pub(crate) bad: fn(&str, String) -> PostgresError,
    /// The tables are there but their version is not.
    pub(crate) missing: fn(&str) -> PostgresError,
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
    newer: |schema, found, supported| PostgresError::NewerTables {
        schema: schema.to_string(),
        found,
        supported,
    },
    bad: |schema, value| PostgresError::BadTableVersion {
        schema: schema.to_string(),
        value,
    },
    missing: |schema| PostgresError::MissingTableVersion {
        schema: schema.to_string(),
    },
};

/// Key of the transaction-level advisory lock that serializes migrations.
const MIGRATION_LOCK: i64 = 0x7374_6174_6567_7270; // "stategrp"

/// The version of `tables`: 0 for a schema this crate never used. A schema holding
/// the tables without a readable version is refused rather than taken for a new one
/// (which would try to create the tables again).
async fn stored_version(
    client: &impl deadpool_postgres::GenericClient,
    schema: &str,
    tables: &Tables,
) -> Result<i64, Failure> {
    let row = client
        .query_one(
            "SELECT to_regclass('stategraph_meta') IS NOT NULL,
                    to_regclass($1::text) IS NOT NULL",
            &[&tables.marker],
        )
        .await?;
    let (has_meta, has_tables): (bool, bool) = (row.get(0), row.get(1));
    let value: Option<String> = if has_meta {
        client
            .query_opt(
                "SELECT value FROM stategraph_meta WHERE key = $1",
                &[&tables.meta_key],
            )
            .await?
            .map(|row| row.get(0))
    } else {
        None
    };
    let Some(value) = value else {
        if has_tables {
            return Err((tables.missing)(schema).into());
        }
        return Ok(0);
    };
    match value.trim().parse::<i64>() {
        Ok(v) if v >= 1 => Ok(v),
        _ => Err((tables.bad)(schema, value).into()),
    }
}

fn refuse_newer(found: i64, schema: &str, tables: &Tables) -> Result<(), Failure> {
    if found > tables.version() {
        return Err((tables.newer)(schema, found, tables.version()).into());
    }
    Ok(())
}

/// Brings `tables` up to their newest version, creating `schema` first when it is
/// not the default one. A newer version is refused before anything is written.
pub(crate) async fn migrate(
    client: &mut Client,
    schema: &str,
    create_schema: bool,
    tables: &Tables,
) -> Result<(), Failure> {
    // Reading first: a newer database is refused without taking a lock or writing.
    let found = stored_version(client, schema, tables).await?;
    refuse_newer(found, schema, tables)?;
    if found == tables.version() {
        return Ok(());
    }
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await?;
    if create_schema {
        // Validated as a plain identifier when the options were built.
        tx.batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS \"{schema}\""))
            .await?;
    }
    // Another worker may have migrated while this one waited for the lock.
    let found = stored_version(&tx, schema, tables).await?;
    refuse_newer(found, schema, tables)?;
    if found == tables.version() {
        return Ok(());
    }
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS stategraph_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    )
    .await?;
    let start = usize::try_from(found).unwrap_or(0);
    for step in tables.steps.iter().skip(start) {
        tx.batch_execute(step).await?;
    }
    tx.execute(
        "INSERT INTO stategraph_meta (key, value) VALUES ($1, $2)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        &[&tables.meta_key, &tables.version().to_string()],
    )
    .await?;
    tx.commit().await?;
    Ok(())
}
