//! Saves (`put`, `put_writes`, `put_batch`) in one network round trip.
//!
//! A save is planned first, without the network: its records encoded, its
//! statements listed with their parameters (the lock checks of the threads this
//! process holds first, then one insert per table for the rows of all its ops, see
//! [`crate::rows`]). Then, on one connection, the statements are prepared (once per
//! connection: the pool keeps them), and `BEGIN`, every statement and `COMMIT` are
//! sent back to back and their answers read together, so the save waits for the
//! server once. The server runs them in order in
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
use crate::rows::{CheckpointRow, Params, Rows, ThreadNs, ValueRow, WriteRow};
use crate::saver::PostgresSaver;
use crate::store::{Result, encode, version_param};

/// Fails (division by zero) unless the fence of thread `$1` is `$2`, the one its
/// holder's lock wrote; inside the save's transaction, that failure aborts it. The
/// row is share-locked until the save commits, so a process taking the thread (which
/// writes a new fence) waits for this save, and reads the thread after it.
///
/// An index probe: asking `pg_locks` instead costs the server a walk over every lock
/// of every session (74 µs of a 140 µs step at 300 connections).
const LOCK_SQL: &str = "SELECT 1 / (SELECT count(*) FROM (
       SELECT 1 FROM stategraph_thread_locks WHERE thread_id = $1 AND fence = $2::text::uuid
       FOR SHARE) AS held)";

/// One statement of a save.
struct Step {
    sql: &'static str,
    params: Params,
    /// For a lock check: the thread and the lock session's backend.
    lock: Option<(String, i32)>,
}

/// One save: the lock checks, run first, then the rows of its ops, stored with one
/// statement per table however many ops the save holds (see [`crate::rows`]).
#[derive(Default)]
pub(crate) struct Save {
    checks: Vec<Step>,
    rows: Rows,
}

impl Save {
    /// Adds the check that `thread_id`'s fence is still `fence`, the one the lock of
    /// the lock session `pid` wrote.
    pub(crate) fn check_lock(&mut self, thread_id: &str, pid: i32, fence: &str) {
        self.checks.push(Step {
            sql: LOCK_SQL,
            params: vec![Box::new(thread_id.to_string()), Box::new(fence.to_string())],
            lock: Some((thread_id.to_string(), pid)),
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
    pub(crate) async fn run(self, saver: &PostgresSaver, client: &Client) -> Result<()> {
        let mut steps = self.checks;
        steps.extend(
            self.rows
                .into_statements()
                .into_iter()
                .map(|(sql, params)| Step {
                    sql,
                    params,
                    lock: None,
                }),
        );
        if steps.is_empty() {
            return Ok(());
        }
        let mut statements = Vec::with_capacity(steps.len());
        for step in &steps {
            statements.push(client.prepare_cached(step.sql).await?);
        }
        let params: Vec<Vec<&(dyn ToSql + Sync)>> = steps
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
        for (step, answer) in steps.iter().zip(answers) {
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
