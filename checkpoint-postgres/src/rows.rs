//! A save's rows, gathered per table and stored with one statement per table.
//!
//! A `put_batch` of `async` durability holds the ops of many supersteps; storing each
//! op with statements of its own costs the server an executor start-up, a bind and an
//! execute per statement. Instead the rows of every op are gathered here, one list per
//! table, and sent as arrays that one `INSERT ... SELECT FROM unnest(...)` stores.
//!
//! One statement sees the table as it was before it started, and `ON CONFLICT DO
//! UPDATE` refuses to touch a row twice, so a key that comes twice in a save is
//! resolved here first, to what storing the ops one after another would leave: the
//! last row for a table whose conflicts update (values, checkpoints, special writes),
//! the first for one whose conflicts keep the stored row (a task's own writes). A
//! checkpoint stored twice keeps the place of its first store in the thread's order.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::hash::Hash;

use tokio_postgres::types::ToSql;

/// A statement's parameters.
pub(crate) type Params = Vec<Box<dyn ToSql + Sync + Send>>;

/// A part's statement, two ways. `upsert` stores a row whose key is stored already as
/// its table wants (keeping the stored row, or replacing it). `plain` is a plain
/// `INSERT`, which costs the server less (no probe of the key first, no speculative
/// insertion to confirm): it fails on such a row instead. A save sends its parts'
/// `plain` statements, and only when that fails on a key stored already, their
/// `upsert` ones: a key comes again when a run resumes an interrupted task, or a
/// checkpoint is stored again, not in a step's save.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Sql {
    pub(crate) plain: &'static str,
    pub(crate) upsert: &'static str,
}

impl Sql {
    /// A part sent the one way.
    const fn upsert(sql: &'static str) -> Self {
        Self {
            plain: sql,
            upsert: sql,
        }
    }
}

/// [`VALUES_ONE_PLAIN_SQL`]'s text.
macro_rules! values_one {
    () => {
        "INSERT INTO stategraph_values (thread_id, checkpoint_ns, channel, version, value)
     SELECT $1, $2, c, v, j FROM unnest($3::text[], $4::bigint[], $5::text[]) AS r(c, v, j)"
    };
}

/// [`VALUES_SQL`] for rows of one thread and namespace (`$1`, `$2`): every `sync` step
/// and most batches. Unnesting two arrays fewer, and the statement of a `sync` step is
/// the one it was before saves were folded.
const VALUES_ONE_SQL: &str = concat!(
    values_one!(),
    "
     ON CONFLICT (thread_id, checkpoint_ns, channel, version)
     DO UPDATE SET value = excluded.value"
);

/// [`VALUES_ONE_SQL`] as a plain `INSERT` (see [`Sql`]).
const VALUES_ONE_PLAIN_SQL: &str = values_one!();

const VALUES_SQL: &str =
    "INSERT INTO stategraph_values (thread_id, checkpoint_ns, channel, version, value)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[])
     ON CONFLICT (thread_id, checkpoint_ns, channel, version)
     DO UPDATE SET value = excluded.value";

// The next numbers of each thread's order, in the order of the rows (`n`). The caller
// holds the thread, so no other writer takes the same numbers (writers that do not are
// ordered by id among equal numbers). The statement sees the table as it was before
// it, so the rows of this save count from the thread's highest number then. A
// checkpoint stored again keeps its own number (the update leaves `seq` alone), so the
// number its row took is left unused: the order stays that of storing the rows one
// after another, without looking each id up first. `base` is computed once per
// thread, before the first row is inserted: inlined, its MAX ran once per row and
// walked back over the rows this statement had inserted so far (quadratic in the batch).
const CHECKPOINTS_SQL: &str = "WITH r AS (
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[],
                            $6::text[], $7::text[])
           WITH ORDINALITY AS r(t, ns, id, parent, checkpoint, value_channels, metadata, n)),
     base AS MATERIALIZED (
       SELECT t, ns, (SELECT COALESCE(MAX(seq), 0) FROM stategraph_checkpoints
                      WHERE thread_id = d.t AND checkpoint_ns = d.ns) AS top
       FROM (SELECT DISTINCT t, ns FROM r) AS d)
     INSERT INTO stategraph_checkpoints
       (thread_id, checkpoint_ns, checkpoint_id, parent_id, checkpoint, value_channels,
        metadata, seq)
     SELECT r.t, r.ns, r.id, r.parent, r.checkpoint, r.value_channels, r.metadata,
         base.top + row_number() OVER (PARTITION BY r.t, r.ns ORDER BY r.n)
     FROM r JOIN base ON base.t = r.t AND base.ns = r.ns
     ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET
       parent_id = excluded.parent_id, checkpoint = excluded.checkpoint,
       value_channels = excluded.value_channels, metadata = excluded.metadata";

/// The start of a one-row checkpoint insert: the table and its columns.
macro_rules! checkpoint_into {
    () => {
        "INSERT INTO stategraph_checkpoints
     (thread_id, checkpoint_ns, checkpoint_id, parent_id, checkpoint, value_channels,
      metadata, seq)"
    };
}

/// The values of a one-row checkpoint insert numbered by the server.
macro_rules! checkpoint_next {
    () => {
        "
     VALUES ($1, $2, $3, $4, $5, $6, $7,
         (SELECT COALESCE(MAX(seq), 0) + 1 FROM stategraph_checkpoints
          WHERE thread_id = $1 AND checkpoint_ns = $2))"
    };
}

/// A checkpoint stored again keeps its number and takes the rest of the new row.
macro_rules! checkpoint_again {
    () => {
        "
     ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET
       parent_id = excluded.parent_id, checkpoint = excluded.checkpoint,
       value_channels = excluded.value_channels, metadata = excluded.metadata"
    };
}

/// [`CHECKPOINTS_SQL`] for one row: the common save of a `sync` step or a `put` keeps
/// the statement it had before saves were folded (the folded one costs the server
/// about as much for one row, a few percent more in `pgbench`).
const CHECKPOINT_SQL: &str = concat!(checkpoint_into!(), checkpoint_next!(), checkpoint_again!());

/// [`CHECKPOINT_SQL`] returning the namespace's highest number after the save: the
/// row's, or, when the checkpoint was stored before (and keeps its number), the
/// highest before the save (the statement does not see its own row).
const CHECKPOINT_FIND_SQL: &str = concat!(
    checkpoint_into!(),
    checkpoint_next!(),
    checkpoint_again!(),
    "
     RETURNING GREATEST(seq, (SELECT COALESCE(MAX(seq), 0) FROM stategraph_checkpoints
                              WHERE thread_id = $1 AND checkpoint_ns = $2))"
);

/// [`CHECKPOINT_SQL`] with the row's number given (`$8`, one past the namespace's
/// highest): the server does not look the highest up (a sixth of its work for the
/// statement of a `sync` step). Returns the namespace's highest after the save: the
/// row's number, or, when the checkpoint was stored before (and keeps its number), the
/// highest before the save.
const CHECKPOINT_AT_SQL: &str = concat!(
    checkpoint_into!(),
    "
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    checkpoint_again!(),
    "
     RETURNING GREATEST(seq, $8 - 1)"
);

/// [`CHECKPOINT_AT_SQL`] as a plain `INSERT` (see [`Sql`]).
const CHECKPOINT_AT_PLAIN_SQL: &str = concat!(
    checkpoint_into!(),
    "
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     RETURNING GREATEST(seq, $8 - 1)"
);

/// How a save's one checkpoint gets its number in the thread's order.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Numbering {
    /// The server gives it (the namespace's highest plus one).
    Server,
    /// The server gives it, and the statement returns the namespace's highest after
    /// the save.
    Find,
    /// It takes this number, one past the namespace's highest; the statement returns
    /// the highest after the save.
    Given(i64),
}

/// A task's own writes are fixed once stored.
const WRITES_KEEP_SQL: &str = "INSERT INTO stategraph_writes
     (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, value)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[],
                          $6::text[], $7::text[])
     ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) DO NOTHING";

/// The writes of one thread and namespace (`$1`, `$2`), as a plain `INSERT`.
macro_rules! writes_one {
    () => {
        "INSERT INTO stategraph_writes
     (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, value)
     SELECT $1, $2, k, t, i, c, v
     FROM unnest($3::text[], $4::text[], $5::bigint[], $6::text[], $7::text[])
         AS r(k, t, i, c, v)"
    };
}

/// [`WRITES_KEEP_SQL`] for rows of one thread and namespace (`$1`, `$2`).
const WRITES_KEEP_ONE_SQL: &str = concat!(
    writes_one!(),
    "
     ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) DO NOTHING"
);

/// [`WRITES_KEEP_ONE_SQL`] as a plain `INSERT` (see [`Sql`]).
const WRITES_KEEP_ONE_PLAIN_SQL: &str = writes_one!();

/// [`WRITES_REPLACE_SQL`] for rows of one thread and namespace (`$1`, `$2`).
const WRITES_REPLACE_ONE_SQL: &str = concat!(
    writes_one!(),
    "
     ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
     DO UPDATE SET channel = excluded.channel, value = excluded.value"
);

/// A special write (an error or an interrupt) is replaced by the task's latest.
const WRITES_REPLACE_SQL: &str = "INSERT INTO stategraph_writes
     (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, value)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[],
                          $6::text[], $7::text[])
     ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
     DO UPDATE SET channel = excluded.channel, value = excluded.value";

/// Rows of one table, one per key, in the order their keys first came.
struct Keyed<K, R> {
    index: HashMap<K, usize>,
    rows: Vec<R>,
}

impl<K, R> Default for Keyed<K, R> {
    fn default() -> Self {
        Self {
            index: HashMap::new(),
            rows: Vec::new(),
        }
    }
}

impl<K: Hash + Eq, R> Keyed<K, R> {
    /// Adds `row`; a row of the same key already there is replaced by it.
    fn last_wins(&mut self, key: K, row: R) {
        match self.index.entry(key) {
            Entry::Occupied(at) => self.rows[*at.get()] = row,
            Entry::Vacant(at) => {
                at.insert(self.rows.len());
                self.rows.push(row);
            }
        }
    }

    /// Adds `row` unless a row of the same key is there already.
    fn first_wins(&mut self, key: K, row: R) {
        if let Entry::Vacant(at) = self.index.entry(key) {
            at.insert(self.rows.len());
            self.rows.push(row);
        }
    }
}

/// Where a row belongs: thread and namespace.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct ThreadNs {
    pub(crate) thread_id: String,
    pub(crate) checkpoint_ns: String,
}

/// A channel value at its version.
pub(crate) struct ValueRow {
    pub(crate) channel: String,
    pub(crate) version: i64,
    pub(crate) json: String,
}

/// A checkpoint row, its values stored apart.
pub(crate) struct CheckpointRow {
    pub(crate) id: String,
    pub(crate) parent_id: Option<String>,
    pub(crate) checkpoint: String,
    pub(crate) value_channels: String,
    pub(crate) metadata: String,
}

/// A pending write of the checkpoint `checkpoint_id`.
pub(crate) struct WriteRow {
    pub(crate) checkpoint_id: String,
    pub(crate) task_id: String,
    pub(crate) idx: i64,
    pub(crate) channel: String,
    pub(crate) json: String,
}

type WriteKey = (ThreadNs, String, String, i64);

/// A save's statements, to be run as parts of one statement.
pub(crate) struct Statements {
    /// Each statement and its parameters.
    pub(crate) parts: Vec<(Sql, Params)>,
    /// The part storing the save's one checkpoint and where the checkpoint belongs,
    /// when the part returns a number (unless numbered by [`Numbering::Server`]).
    pub(crate) numbered: Option<(usize, ThreadNs)>,
}

/// The rows of a save, per table.
#[derive(Default)]
pub(crate) struct Rows {
    values: Keyed<(ThreadNs, String, i64), (ThreadNs, ValueRow)>,
    checkpoints: Keyed<(ThreadNs, String), (ThreadNs, CheckpointRow)>,
    keep: Keyed<WriteKey, (ThreadNs, WriteRow)>,
    replace: Keyed<WriteKey, (ThreadNs, WriteRow)>,
}

impl Rows {
    /// Adds a channel value; a later one of the same channel and version replaces it.
    pub(crate) fn value(&mut self, place: &ThreadNs, row: ValueRow) {
        let key = (place.clone(), row.channel.clone(), row.version);
        self.values.last_wins(key, (place.clone(), row));
    }

    /// Adds a checkpoint; a later store of the same id replaces its row, in its place.
    pub(crate) fn checkpoint(&mut self, place: &ThreadNs, row: CheckpointRow) {
        let key = (place.clone(), row.id.clone());
        self.checkpoints.last_wins(key, (place.clone(), row));
    }

    /// Adds a pending write: a special one (`replace`) is replaced by a later one of the
    /// same task and index, a task's own write is kept over a later one.
    pub(crate) fn write(&mut self, place: &ThreadNs, row: WriteRow, replace: bool) {
        let key = (
            place.clone(),
            row.checkpoint_id.clone(),
            row.task_id.clone(),
            row.idx,
        );
        if replace {
            self.replace.last_wins(key, (place.clone(), row));
        } else {
            self.keep.first_wins(key, (place.clone(), row));
        }
    }

    /// How many checkpoints the save stores.
    pub(crate) fn checkpoints(&self) -> usize {
        self.checkpoints.rows.len()
    }

    /// The statements storing the rows, at most one per table (and kind of write),
    /// with their parameters, to be run as parts of one statement. A special write
    /// replaces a task's own write of the same key whichever came first, as storing
    /// the ops one after another would: the own write is left out (one statement may
    /// not touch a row twice). A save's one checkpoint is numbered as `numbering`
    /// says for its thread and namespace.
    pub(crate) fn into_statements(
        self,
        numbering: impl FnOnce(&ThreadNs) -> Numbering,
    ) -> Statements {
        let mut out = Vec::with_capacity(4);
        let mut keep = self.keep;
        if !self.replace.rows.is_empty() {
            let replaced: std::collections::HashSet<usize> = keep
                .index
                .iter()
                .filter(|(key, _)| self.replace.index.contains_key(*key))
                .map(|(_, &at)| at)
                .collect();
            if !replaced.is_empty() {
                let rows = std::mem::take(&mut keep.rows);
                keep.rows = rows
                    .into_iter()
                    .enumerate()
                    .filter(|(at, _)| !replaced.contains(at))
                    .map(|(_, row)| row)
                    .collect();
            }
        }
        if !self.values.rows.is_empty() {
            out.push(values_statement(self.values.rows));
        }
        let mut checkpoints = self.checkpoints.rows;
        let mut numbered_part = None;
        if checkpoints.len() == 1
            && let Some((place, row)) = checkpoints.pop()
        {
            let numbered = numbering(&place);
            if numbered != Numbering::Server {
                numbered_part = Some((out.len(), place.clone()));
            }
            let mut params: Params = vec![
                Box::new(place.thread_id),
                Box::new(place.checkpoint_ns),
                Box::new(row.id),
                Box::new(row.parent_id),
                Box::new(row.checkpoint),
                Box::new(row.value_channels),
                Box::new(row.metadata),
            ];
            let sql = match numbered {
                Numbering::Server => Sql::upsert(CHECKPOINT_SQL),
                Numbering::Find => Sql::upsert(CHECKPOINT_FIND_SQL),
                Numbering::Given(seq) => {
                    params.push(Box::new(seq));
                    Sql {
                        plain: CHECKPOINT_AT_PLAIN_SQL,
                        upsert: CHECKPOINT_AT_SQL,
                    }
                }
            };
            out.push((sql, params));
        } else if !checkpoints.is_empty() {
            out.push((Sql::upsert(CHECKPOINTS_SQL), checkpoint_params(checkpoints)));
        }
        let keep_one = Sql {
            plain: WRITES_KEEP_ONE_PLAIN_SQL,
            upsert: WRITES_KEEP_ONE_SQL,
        };
        for (rows, sql) in [
            (keep.rows, [keep_one, Sql::upsert(WRITES_KEEP_SQL)]),
            (
                self.replace.rows,
                [
                    Sql::upsert(WRITES_REPLACE_ONE_SQL),
                    Sql::upsert(WRITES_REPLACE_SQL),
                ],
            ),
        ] {
            if !rows.is_empty() {
                out.push(write_statement(rows, sql));
            }
        }
        Statements {
            parts: out,
            numbered: numbered_part,
        }
    }
}

/// The thread and namespace columns of `rows`: arrays, or, when every row has the
/// same, that one (`true`).
fn place_columns<R>(rows: &[(ThreadNs, R)]) -> (bool, Params) {
    if let Some((first, _)) = rows.first()
        && rows.iter().all(|(p, _)| p == first)
    {
        let (thread, ns) = (first.thread_id.clone(), first.checkpoint_ns.clone());
        return (true, vec![Box::new(thread), Box::new(ns)]);
    }
    let (threads, namespaces): (Vec<String>, Vec<String>) = rows
        .iter()
        .map(|(p, _)| (p.thread_id.clone(), p.checkpoint_ns.clone()))
        .unzip();
    (false, vec![Box::new(threads), Box::new(namespaces)])
}

fn values_statement(rows: Vec<(ThreadNs, ValueRow)>) -> (Sql, Params) {
    let (one, mut params) = place_columns(&rows);
    let (mut channels, mut versions, mut jsons) = (Vec::new(), Vec::new(), Vec::new());
    for (_, row) in rows {
        channels.push(row.channel);
        versions.push(row.version);
        jsons.push(row.json);
    }
    params.push(Box::new(channels));
    params.push(Box::new(versions));
    params.push(Box::new(jsons));
    let sql = if one {
        Sql {
            plain: VALUES_ONE_PLAIN_SQL,
            upsert: VALUES_ONE_SQL,
        }
    } else {
        Sql::upsert(VALUES_SQL)
    };
    (sql, params)
}

fn checkpoint_params(rows: Vec<(ThreadNs, CheckpointRow)>) -> Params {
    let (threads, namespaces): (Vec<String>, Vec<String>) = rows
        .iter()
        .map(|(p, _)| (p.thread_id.clone(), p.checkpoint_ns.clone()))
        .unzip();
    let n = rows.len();
    let (mut ids, mut parents, mut checkpoints) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    let (mut value_channels, mut metadata) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for (_, row) in rows {
        ids.push(row.id);
        parents.push(row.parent_id);
        checkpoints.push(row.checkpoint);
        value_channels.push(row.value_channels);
        metadata.push(row.metadata);
    }
    vec![
        Box::new(threads),
        Box::new(namespaces),
        Box::new(ids),
        Box::new(parents),
        Box::new(checkpoints),
        Box::new(value_channels),
        Box::new(metadata),
    ]
}

/// The statement storing `rows`: `sql[0]` if they share a thread and namespace,
/// else `sql[1]`.
fn write_statement(rows: Vec<(ThreadNs, WriteRow)>, sql: [Sql; 2]) -> (Sql, Params) {
    let (one, mut params) = place_columns(&rows);
    let n = rows.len();
    let (mut ids, mut tasks, mut idxs) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    let (mut channels, mut jsons) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for (_, row) in rows {
        ids.push(row.checkpoint_id);
        tasks.push(row.task_id);
        idxs.push(row.idx);
        channels.push(row.channel);
        jsons.push(row.json);
    }
    params.push(Box::new(ids));
    params.push(Box::new(tasks));
    params.push(Box::new(idxs));
    params.push(Box::new(channels));
    params.push(Box::new(jsons));
    (if one { sql[0] } else { sql[1] }, params)
}
