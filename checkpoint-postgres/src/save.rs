//! Saves (`put`, `put_writes`, `put_batch`) in one network round trip.
//!
//! A save is planned first, without the network: its records encoded, its
//! statements listed with their parameters (the lock checks of the threads this
//! process holds first, then each op's inserts in order). Then, on one connection,
//! the statements are prepared (once per connection: the pool keeps them), and
//! `BEGIN`, every statement and `COMMIT` are sent back to back and their answers read
//! together, so the save waits for the server once. The server runs them in order in
//! one transaction: a statement that fails aborts it, and the `COMMIT` behind it then
//! ends it as a rollback, so a failed save stores nothing.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use deadpool_postgres::Client;
use stategraph::checkpoint::record::{Place, checkpoint_what, value_what};
use stategraph::checkpoint::{Checkpoint, CheckpointConfig, CheckpointMetadata, PendingWrite};
use tokio_postgres::Statement;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;

use crate::error::Failure;
use crate::lock;
use crate::saver::PostgresSaver;
use crate::store::{Result, encode, version_param};

/// Fails (division by zero) unless the lock session `$1` holds the advisory lock
/// whose key has the halves `$2`, `$3` (a bigint key shows in `pg_locks` so): inside
/// the save's transaction, that failure aborts it.
const LOCK_SQL: &str = "SELECT 1 / (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'
     AND pid = $1 AND classid = $2 AND objid = $3 AND objsubid = 1 AND granted)";

const VALUES_SQL: &str =
    "INSERT INTO stategraph_values (thread_id, checkpoint_ns, channel, version, value)
     SELECT $1, $2, c, v, j FROM unnest($3::text[], $4::bigint[], $5::text[]) AS r(c, v, j)
     ON CONFLICT (thread_id, checkpoint_ns, channel, version)
     DO UPDATE SET value = excluded.value";

// The next number of the thread's order; a checkpoint stored again keeps its own. The
// caller holds the thread, so no other writer takes the same number (writers that do
// not are ordered by id among equal numbers). Statements of one save run in order, so
// a later checkpoint of the same save sees the earlier one's number.
const CHECKPOINT_SQL: &str = "INSERT INTO stategraph_checkpoints
     (thread_id, checkpoint_ns, checkpoint_id, parent_id, checkpoint, value_channels,
      metadata, seq)
     VALUES ($1, $2, $3, $4, $5, $6, $7,
         (SELECT COALESCE(MAX(seq), 0) + 1 FROM stategraph_checkpoints
          WHERE thread_id = $1 AND checkpoint_ns = $2))
     ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET
       parent_id = excluded.parent_id, checkpoint = excluded.checkpoint,
       value_channels = excluded.value_channels, metadata = excluded.metadata";

/// A task's own writes are fixed once stored.
const WRITES_KEEP_SQL: &str = "INSERT INTO stategraph_writes
     (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, value)
     SELECT $1, $2, $3, t, i, c, v
     FROM unnest($4::text[], $5::bigint[], $6::text[], $7::text[]) AS r(t, i, c, v)
     ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) DO NOTHING";

/// A special write (an error or an interrupt) is replaced by the task's latest.
const WRITES_REPLACE_SQL: &str = "INSERT INTO stategraph_writes
     (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, value)
     SELECT $1, $2, $3, t, i, c, v
     FROM unnest($4::text[], $5::bigint[], $6::text[], $7::text[]) AS r(t, i, c, v)
     ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
     DO UPDATE SET channel = excluded.channel, value = excluded.value";

type Param = Box<dyn ToSql + Sync + Send>;

/// One statement of a save.
struct Step {
    sql: &'static str,
    params: Vec<Param>,
    /// For a lock check: the thread and the lock session's backend.
    lock: Option<(String, i32)>,
}

/// The statements of one save, in the order the server runs them.
#[derive(Default)]
pub(crate) struct Save {
    steps: Vec<Step>,
}

impl Save {
    /// Adds the check that the lock session `pid` still holds `thread_id`'s lock.
    pub(crate) fn check_lock(&mut self, thread_id: &str, pid: i32, key: i64) {
        // A bigint advisory key shows in pg_locks as its high and low halves.
        let (high, low) = ((key >> 32) as u32, key as u32);
        self.steps.push(Step {
            sql: LOCK_SQL,
            params: vec![Box::new(pid), Box::new(high), Box::new(low)],
            lock: Some((thread_id.to_string(), pid)),
        });
    }

    /// Adds the statements storing `checkpoint` (its channel values in
    /// `stategraph_values`, the rest in `stategraph_checkpoints`); returns where it
    /// will be stored.
    pub(crate) fn checkpoint(
        &mut self,
        limit: usize,
        config: &CheckpointConfig,
        mut checkpoint: Checkpoint,
        metadata: &CheckpointMetadata,
    ) -> Result<CheckpointConfig> {
        let place = Place::of(config);
        let what = checkpoint_what(&checkpoint.id, place);
        let (mut versions, mut jsons, mut channels) = (Vec::new(), Vec::new(), Vec::new());
        // A value of a channel with no version stays inline: there is no version to find
        // it at again.
        let values = std::mem::take(&mut checkpoint.channel_values);
        for (channel, value) in values {
            let Some(version) = checkpoint.channel_versions.get(&channel).copied() else {
                encode(&value, limit, || value_what(&channel, 0, place))?;
                checkpoint.channel_values.insert(channel, value);
                continue;
            };
            versions.push(version_param(&channel, version)?);
            jsons.push(encode(&value, limit, || {
                value_what(&channel, version, place)
            })?);
            channels.push(channel);
        }
        let checkpoint_json = encode(&checkpoint, limit, || what.clone())?;
        let metadata_json = encode(metadata, limit, || format!("metadata of {what}"))?;
        let value_channels = encode(&channels, limit, || format!("value list of {what}"))?;
        if !channels.is_empty() {
            self.steps.push(Step {
                sql: VALUES_SQL,
                params: vec![
                    Box::new(config.thread_id.clone()),
                    Box::new(config.checkpoint_ns.clone()),
                    Box::new(channels),
                    Box::new(versions),
                    Box::new(jsons),
                ],
                lock: None,
            });
        }
        self.steps.push(Step {
            sql: CHECKPOINT_SQL,
            params: vec![
                Box::new(config.thread_id.clone()),
                Box::new(config.checkpoint_ns.clone()),
                Box::new(checkpoint.id.clone()),
                Box::new(config.checkpoint_id.clone()),
                Box::new(checkpoint_json),
                Box::new(value_channels),
                Box::new(metadata_json),
            ],
            lock: None,
        });
        Ok(CheckpointConfig {
            thread_id: config.thread_id.clone(),
            checkpoint_ns: config.checkpoint_ns.clone(),
            checkpoint_id: Some(checkpoint.id),
        })
    }

    /// Adds the statements storing `writes` as pending writes of the checkpoint
    /// `config` names.
    pub(crate) fn writes(
        &mut self,
        limit: usize,
        config: &CheckpointConfig,
        writes: &[PendingWrite],
    ) -> Result<()> {
        let place = Place::of(config);
        let id = config.checkpoint_id.as_deref().unwrap_or_default();
        let mut keep = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut replace = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for w in writes {
            let json = encode(&w.value, limit, || {
                format!(
                    "pending write {} of task {} on checkpoint {id} of {place}",
                    w.idx, w.task_id
                )
            })?;
            let into = if w.is_runtime_record() {
                &mut replace
            } else {
                &mut keep
            };
            into.0.push(w.task_id.clone());
            into.1.push(i64::from(w.idx));
            into.2.push(w.channel.clone());
            into.3.push(json);
        }
        for (rows, sql) in [(keep, WRITES_KEEP_SQL), (replace, WRITES_REPLACE_SQL)] {
            if rows.0.is_empty() {
                continue;
            }
            self.steps.push(Step {
                sql,
                params: vec![
                    Box::new(config.thread_id.clone()),
                    Box::new(config.checkpoint_ns.clone()),
                    Box::new(id.to_string()),
                    Box::new(rows.0),
                    Box::new(rows.1),
                    Box::new(rows.2),
                    Box::new(rows.3),
                ],
                lock: None,
            });
        }
        Ok(())
    }

    /// Runs the save on `client` in one transaction: all of it is stored, or none.
    pub(crate) async fn run(self, saver: &PostgresSaver, client: &Client) -> Result<()> {
        if self.steps.is_empty() {
            return Ok(());
        }
        let mut statements = Vec::with_capacity(self.steps.len());
        for step in &self.steps {
            statements.push(client.prepare_cached(step.sql).await?);
        }
        let params: Vec<Vec<&(dyn ToSql + Sync)>> = self
            .steps
            .iter()
            .map(|s| s.params.iter().map(|p| p.as_ref() as _).collect())
            .collect();
        let (answers, end) = pipeline(client, &statements, &params).await;
        let mut answers = answers.into_iter();
        if let Some(Err(e)) = answers.next() {
            return Err(e.into());
        }
        // The first failure is the cause; the statements after it only report the
        // aborted transaction.
        for (step, answer) in self.steps.iter().zip(answers) {
            match (answer, &step.lock) {
                (Ok(_), _) => {}
                (Err(e), Some((thread_id, pid)))
                    if e.code() == Some(&SqlState::DIVISION_BY_ZERO) =>
                {
                    return Err(lock::lost_on_server(saver, thread_id, *pid));
                }
                (Err(e), _) => return Err(e.into()),
            }
        }
        end.map_err(Failure::from)
    }
}

type Answer<'a> =
    Pin<Box<dyn Future<Output = std::result::Result<u64, tokio_postgres::Error>> + Send + 'a>>;

/// A request on the connection and, once it has come, its answer.
enum Slot<'a> {
    Waiting(Answer<'a>),
    Done(std::result::Result<u64, tokio_postgres::Error>),
}

impl<'a> Slot<'a> {
    fn new(answer: Answer<'a>) -> Self {
        Slot::Waiting(answer)
    }

    /// Polls a waiting request; whether its answer has come.
    fn poll(&mut self, cx: &mut Context<'_>) -> bool {
        if let Slot::Waiting(answer) = self
            && let Poll::Ready(out) = answer.as_mut().poll(cx)
        {
            *self = Slot::Done(out);
        }
        matches!(self, Slot::Done(_))
    }

    fn failed(&self) -> bool {
        matches!(self, Slot::Done(Err(_)))
    }

    fn into_answer(self) -> std::result::Result<u64, tokio_postgres::Error> {
        match self {
            Slot::Done(answer) => answer,
            // Only called once every slot is done.
            Slot::Waiting(_) => Ok(0),
        }
    }
}

/// Rolls the transaction back if the save is dropped before its end was sent (a
/// cancelled run), so the connection goes back to the pool outside any transaction.
struct Open<'c> {
    client: &'c tokio_postgres::Client,
    ended: bool,
}

impl Drop for Open<'_> {
    fn drop(&mut self) {
        if !self.ended {
            // The first poll sends the request; its answer is not needed.
            let mut rollback = std::pin::pin!(self.client.batch_execute("ROLLBACK"));
            let _ = rollback
                .as_mut()
                .poll(&mut Context::from_waker(Waker::noop()));
        }
    }
}

/// Sends `BEGIN`, each statement with its parameters and `COMMIT` back to back, and
/// waits for all their answers: those of `BEGIN` and the statements, in order, and
/// that of the end.
///
/// A request is sent when its future is first polled. A statement whose future fails
/// at once was not sent (or already failed on the server): the end is then
/// `ROLLBACK`, so the statements sent after it are not committed.
async fn pipeline(
    client: &tokio_postgres::Client,
    statements: &[Statement],
    params: &[Vec<&(dyn ToSql + Sync)>],
) -> (
    Vec<std::result::Result<u64, tokio_postgres::Error>>,
    std::result::Result<(), tokio_postgres::Error>,
) {
    let mut open = Open {
        client,
        ended: false,
    };
    let mut slots = Vec::with_capacity(statements.len() + 2);
    slots.push(Slot::new(Box::pin(async move {
        client.batch_execute("BEGIN").await.map(|()| 0)
    })));
    for (statement, params) in statements.iter().zip(params) {
        slots.push(Slot::new(Box::pin(client.execute(statement, params))));
    }
    std::future::poll_fn(|cx| {
        for slot in &mut slots {
            slot.poll(cx);
        }
        Poll::Ready(())
    })
    .await;
    let end_sql = if slots.iter().any(Slot::failed) {
        "ROLLBACK"
    } else {
        "COMMIT"
    };
    slots.push(Slot::new(Box::pin(async move {
        client.batch_execute(end_sql).await.map(|()| 0)
    })));
    std::future::poll_fn(|cx| {
        let mut done = true;
        for slot in &mut slots {
            done &= slot.poll(cx);
        }
        // The end has been sent: the server closes the transaction whatever happens.
        open.ended = true;
        if done { Poll::Ready(()) } else { Poll::Pending }
    })
    .await;
    // After a `ROLLBACK` end, one of the answers holds the failure.
    let end = slots.pop().map_or(Ok(0), Slot::into_answer).map(drop);
    let answers = slots.into_iter().map(Slot::into_answer).collect();
    (answers, end)
}
