//! Saves (`put`, `put_writes`, `put_batch`) in one statement.
//!
//! A save is planned first, without the network: its records encoded, the rows of all
//! its ops gathered per table (see [`crate::rows`]), and the fences of the threads
//! this process holds listed. Then it is sent as one statement: an insert per table,
//! each a data-modifying `WITH` query, and a main query checking the fences. The
//! server runs it as one transaction (committed when it ends), so a failure anywhere,
//! a fence that is no longer its lock's among them, stores nothing; and the save waits
//! for one answer. Against `BEGIN`, a statement per table and `COMMIT` sent together,
//! that is one message and one answer instead of one per statement, both for the
//! server and for this process. The inserts of a step's save are sent as plain
//! `INSERT`s first, and again with `ON CONFLICT` only should one meet a key stored
//! already (see [`crate::rows::Sql`]).

use std::fmt::Write;

use deadpool_postgres::Client;
use stategraph::checkpoint::record::{Place, checkpoint_what, value_what};
use stategraph::checkpoint::{Checkpoint, CheckpointConfig, CheckpointMetadata, PendingWrite};
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;

use crate::lock::{Held, Locks};
use crate::rows::{CheckpointRow, Numbering, Params, Rows, Sql, ThreadNs, ValueRow, WriteRow};
use crate::store::{Result, encode, version_param};

/// The main query of a save holding threads: fails (division by zero) unless the
/// fence of each thread of `$1` is the one of `$2` at its place, the one its holder's
/// lock wrote. The rows are share-locked until the save commits, so a process taking
/// one of the threads (which writes a new fence) waits for this save, and reads the
/// thread after it.
///
/// An index probe per thread. Asking `pg_locks` whether the lock session still held
/// the lock instead cost the server a walk over every lock of every session, which
/// grows with each thread held anywhere on the server.
const FENCES_SQL: &str = "SELECT 1 / ((SELECT count(*) FROM (
       SELECT 1 FROM stategraph_thread_locks AS l
       JOIN unnest($1::text[], $2::text[]) AS f(t, fence)
         ON l.thread_id = f.t AND l.fence = f.fence::uuid
       FOR SHARE OF l) AS held) = cardinality($1::text[]))::int";

/// [`FENCES_SQL`] for one thread (`$1`, fence `$2`), the save of a run: the row is
/// looked up, without the join and the count a list of threads needs (a third of the
/// server's work for the statement of a `sync` step).
const FENCE_SQL: &str = "SELECT 1 / COALESCE((SELECT 1 FROM stategraph_thread_locks
       WHERE thread_id = $1 AND fence = $2::text::uuid FOR SHARE), 0)";

/// After a fence check failed: the threads of `$1` whose fence is no longer `$2`'s.
const REPLACED_SQL: &str = "SELECT f.t FROM unnest($1::text[], $2::text[]) AS f(t, fence)
     WHERE NOT EXISTS (SELECT 1 FROM stategraph_thread_locks AS l
                       WHERE l.thread_id = f.t AND l.fence = f.fence::uuid)";

/// A fence to check: the thread, which lock of this process holds it, and the fence
/// its lock wrote.
struct Check {
    thread_id: String,
    held: Held,
    fence: String,
}

/// One save: the fences to check and the rows of its ops.
#[derive(Default)]
pub(crate) struct Save {
    checks: Vec<Check>,
    rows: Rows,
}

impl Save {
    /// Adds the check that `thread_id`'s fence is still `fence`, the one its lock
    /// `held` wrote.
    pub(crate) fn check_lock(&mut self, thread_id: &str, held: Held, fence: &str) {
        self.checks.push(Check {
            thread_id: thread_id.to_string(),
            held,
            fence: fence.to_string(),
        });
    }

    /// Adds the rows storing `checkpoint` (its channel values in `stategraph_values`,
    /// the rest in `stategraph_checkpoints`); returns where it will be stored.
    pub(crate) fn checkpoint(
        &mut self,
        limit: usize,
        config: &CheckpointConfig,
        mut checkpoint: Checkpoint,
        metadata: &CheckpointMetadata,
    ) -> Result<CheckpointConfig> {
        let place = Place::of(config);
        let what = checkpoint_what(&checkpoint.id, place);
        let owner = ThreadNs {
            thread_id: config.thread_id.clone(),
            checkpoint_ns: config.checkpoint_ns.clone(),
        };
        let mut values = Vec::new();
        let mut channels = Vec::new();
        // A value of a channel with no version stays inline: there is no version to find
        // it at again.
        let taken = std::mem::take(&mut checkpoint.channel_values);
        for (channel, value) in taken {
            let Some(version) = checkpoint.channel_versions.get(&channel).copied() else {
                encode(&value, limit, || value_what(&channel, 0, place))?;
                checkpoint.channel_values.insert(channel, value);
                continue;
            };
            let json = encode(&value, limit, || value_what(&channel, version, place))?;
            values.push(ValueRow {
                channel: channel.clone(),
                version: version_param(&channel, version)?,
                json,
            });
            channels.push(channel);
        }
        let checkpoint_json = encode(&checkpoint, limit, || what.clone())?;
        let metadata_json = encode(metadata, limit, || format!("metadata of {what}"))?;
        let value_channels = encode(&channels, limit, || format!("value list of {what}"))?;
        // Nothing is added before every record of the op is encoded: an op refused
        // for its size leaves the save as it was.
        for row in values {
            self.rows.value(&owner, row);
        }
        self.rows.checkpoint(
            &owner,
            CheckpointRow {
                id: checkpoint.id.clone(),
                parent_id: config.checkpoint_id.clone(),
                checkpoint: checkpoint_json,
                value_channels,
                metadata: metadata_json,
            },
        );
        Ok(CheckpointConfig {
            thread_id: owner.thread_id,
            checkpoint_ns: owner.checkpoint_ns,
            checkpoint_id: Some(checkpoint.id),
        })
    }

    /// Adds the rows storing `writes` as pending writes of the checkpoint `config`
    /// names.
    pub(crate) fn writes(
        &mut self,
        limit: usize,
        config: &CheckpointConfig,
        writes: &[PendingWrite],
    ) -> Result<()> {
        let place = Place::of(config);
        let id = config.checkpoint_id.as_deref().unwrap_or_default();
        let owner = ThreadNs {
            thread_id: config.thread_id.clone(),
            checkpoint_ns: config.checkpoint_ns.clone(),
        };
        let mut rows = Vec::with_capacity(writes.len());
        for w in writes {
            let json = encode(&w.value, limit, || {
                format!(
                    "pending write {} of task {} on checkpoint {id} of {place}",
                    w.idx, w.task_id
                )
            })?;
            let row = WriteRow {
                checkpoint_id: id.to_string(),
                task_id: w.task_id.clone(),
                idx: i64::from(w.idx),
                channel: w.channel.clone(),
                json,
            };
            rows.push((row, w.is_runtime_record()));
        }
        for (row, replace) in rows {
            self.rows.write(&owner, row, replace);
        }
        Ok(())
    }

    /// Runs the save on `client` in one transaction: all of it is stored, or none.
    pub(crate) async fn run(self, locks: &Locks, client: &Client) -> Result<()> {
        let Save { checks, rows } = self;
        if rows.checkpoints() > 1 {
            for c in &checks {
                locks.forget_seqs(c.held);
            }
        }
        let held = |place: &ThreadNs| {
            checks
                .iter()
                .find(|c| c.thread_id == place.thread_id)
                .map(|c| c.held)
        };
        let statements = rows.into_statements(|place| match held(place) {
            None => Numbering::Server,
            Some(held) => locks
                .take_seq(held, &place.checkpoint_ns)
                .map_or(Numbering::Find, Numbering::Given),
        });
        if statements.parts.is_empty() && checks.is_empty() {
            return Ok(());
        }
        // A held thread's checkpoint: its number comes back, for the next save to give.
        let seen = statements
            .numbered
            .and_then(|(part, place)| Some((part, held(&place)?, place.checkpoint_ns)));
        let mut shape = Vec::with_capacity(statements.parts.len());
        let mut params: Params = Vec::new();
        for (sql, part_params) in statements.parts {
            shape.push((sql, part_params.len()));
            params.extend(part_params);
        }
        match checks.as_slice() {
            [] => {}
            [one] => {
                params.push(Box::new(one.thread_id.clone()));
                params.push(Box::new(one.fence.clone()));
            }
            many => {
                let (threads, fences) = fence_columns(many);
                params.push(Box::new(threads));
                params.push(Box::new(fences));
            }
        }
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p.as_ref() as _).collect();
        let seen_part = seen.as_ref().map(|s| s.0);
        let send = |pick: fn(&Sql) -> &'static str| {
            let sql = compose(&shape, pick, checks.len(), seen_part);
            let refs = &refs;
            async move {
                let statement = client.prepare_cached(&sql).await?;
                match seen_part {
                    Some(_) => client.query_one(&statement, refs).await.map(Some),
                    None => client.execute(&statement, refs).await.map(|_| None),
                }
            }
        };
        let mut stored = send(|sql| sql.plain).await;
        if let Err(e) = &stored
            && e.code() == Some(&SqlState::UNIQUE_VIOLATION)
            && shape.iter().any(|(sql, _)| sql.plain != sql.upsert)
        {
            stored = send(|sql| sql.upsert).await;
        }
        let row = match stored {
            Ok(row) => row,
            Err(e) => return Err(failed(locks, client, &checks, e).await),
        };
        if let (Some((_, held, ns)), Some(Ok(seq))) = (seen, row.map(|r| r.try_get(1))) {
            locks.saw_seq(held, &ns, seq);
        }
        Ok(())
    }
}

/// The statement of a save: its parts (each `pick`ed of its two ways, with how many
/// parameters it takes) as data-modifying `WITH` queries, and a main query checking
/// `checks` fences (their parameters last), also returning what part `seen` returns.
fn compose(
    parts: &[(Sql, usize)],
    pick: fn(&Sql) -> &'static str,
    checks: usize,
    seen: Option<usize>,
) -> String {
    let mut sql = String::with_capacity(4096);
    let mut taken = 0;
    for (i, (part, n)) in parts.iter().enumerate() {
        let _ = write!(sql, "{} s{i} AS (", if i == 0 { "WITH" } else { "," });
        renumber(&mut sql, pick(part), taken);
        sql.push_str(")\n");
        taken += n;
    }
    match checks {
        0 => sql.push_str("SELECT 1"),
        1 => renumber(&mut sql, FENCE_SQL, taken),
        _ => renumber(&mut sql, FENCES_SQL, taken),
    }
    if let Some(part) = seen {
        let _ = write!(sql, ", (SELECT * FROM s{part})");
    }
    sql
}

/// The error of a save that failed with `e`: when a fence check failed, the lock lost
/// (of the first thread whose fence was replaced, if the server can still tell, else
/// of the first checked).
async fn failed(
    locks: &Locks,
    client: &Client,
    checks: &[Check],
    e: tokio_postgres::Error,
) -> crate::error::Failure {
    if checks.is_empty() || e.code() != Some(&SqlState::DIVISION_BY_ZERO) {
        return e.into();
    }
    let (threads, fences) = fence_columns(checks);
    let replaced: Option<String> = client
        .query(REPLACED_SQL, &[&threads, &fences])
        .await
        .ok()
        .and_then(|rows| rows.first().and_then(|r| r.try_get(0).ok()));
    let lost = replaced
        .and_then(|t| checks.iter().find(|c| c.thread_id == t))
        .or(checks.first());
    match lost {
        Some(c) => locks.lost_on_server(&c.thread_id, c.held.pid),
        None => e.into(),
    }
}

/// The threads of `checks` and their fences, as two columns.
fn fence_columns(checks: &[Check]) -> (Vec<String>, Vec<String>) {
    checks
        .iter()
        .map(|c| (c.thread_id.clone(), c.fence.clone()))
        .unzip()
}

/// Appends `sql` to `out` with each parameter `$n` numbered `$(n + by)`.
fn renumber(out: &mut String, sql: &str, by: usize) {
    let mut rest = sql;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..=at]);
        rest = &rest[at + 1..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if let Ok(n) = rest[..digits].parse::<usize>() {
            let _ = write!(out, "{}", n + by);
            rest = &rest[digits..];
        }
    }
    out.push_str(rest);
}

#[cfg(test)]
mod tests {
    use super::renumber;

    #[test]
    fn parameters_are_numbered_after_those_before() {
        let mut out = String::from("x ");
        renumber(
            &mut out,
            "SELECT $1, $2::text[], $10 FROM t WHERE a = $1",
            7,
        );
        assert_eq!(out, "x SELECT $8, $9::text[], $17 FROM t WHERE a = $8");
        let mut out = String::new();
        renumber(&mut out, "a $ b $x", 3);
        assert_eq!(out, "a $ b $x");
    }
}
