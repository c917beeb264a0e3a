//! Group commit: saves that arrive while another save is being committed (other
//! threads' steps, run concurrently on one saver) are stored together in the next
//! transaction, so they share its `fsync` instead of queueing for one each.

use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::Connection;
use stategraph::checkpoint::SaveOp;
use tokio::sync::oneshot;

use crate::error::Failure;
use crate::store;

/// Saves waiting for a transaction, and whether one is being led.
#[derive(Default)]
pub(crate) struct GroupCommit {
    queue: Mutex<Queue>,
}

#[derive(Default)]
struct Queue {
    waiting: Vec<Waiter>,
    /// Whether a leader is storing groups (it takes whatever waits when it is done).
    leading: bool,
}

/// One caller's save and where its outcome goes.
struct Waiter {
    ops: Vec<SaveOp>,
    done: oneshot::Sender<Result<(), Failure>>,
}

/// A caller's save was lost with the leader (a panic while storing its group).
#[derive(Debug, thiserror::Error)]
#[error("the save was not stored: the saver's writer stopped while storing it; save again")]
pub(crate) struct LeaderStopped;

impl GroupCommit {
    fn queue(&self) -> MutexGuard<'_, Queue> {
        // Nothing panics while the queue is locked, so a poisoned one is consistent.
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stores `ops` in one transaction, shared with the saves that wait alongside;
    /// returns once that transaction is committed. All or nothing per caller: a
    /// failing save (say, an oversized record) is rolled back alone.
    pub(crate) async fn save(
        self: &Arc<Self>,
        conn: &Arc<Mutex<Connection>>,
        limit: usize,
        ops: Vec<SaveOp>,
    ) -> Result<Result<(), Failure>, LeaderStopped> {
        let (done, outcome) = oneshot::channel();
        let lead = {
            let mut queue = self.queue();
            queue.waiting.push(Waiter { ops, done });
            !std::mem::replace(&mut queue.leading, true)
        };
        if lead {
            let (group, conn) = (self.clone(), conn.clone());
            let job = move || group.lead(&conn, limit);
            match tokio::runtime::Handle::try_current() {
                // Detached: the leader's own outcome arrives like everyone's.
                Ok(handle) => drop(handle.spawn_blocking(job)),
                Err(_) => job(),
            }
        }
        outcome.await.map_err(|_| LeaderStopped)
    }

    /// Stores groups until none waits.
    fn lead(&self, conn: &Mutex<Connection>, limit: usize) {
        let mut leading = Leading {
            group: self,
            finished: false,
        };
        loop {
            let group = {
                let mut queue = self.queue();
                if queue.waiting.is_empty() {
                    queue.leading = false;
                    leading.finished = true;
                    return;
                }
                std::mem::take(&mut queue.waiting)
            };
            // A panic mid-transaction rolls it back as it unwinds, so the connection
            // behind a poisoned lock is still consistent.
            let mut conn = conn.lock().unwrap_or_else(|e| e.into_inner());
            let outcomes = store_group(&mut conn, limit, group);
            drop(conn);
            for (done, outcome) in outcomes {
                // A caller that stopped waiting no longer needs its outcome.
                let _ = done.send(outcome);
            }
        }
    }
}

/// Resets the queue if the leader unwinds: the saves still waiting fail (their
/// callers see [`LeaderStopped`]) instead of waiting for a leader that is gone.
struct Leading<'a> {
    group: &'a GroupCommit,
    finished: bool,
}

impl Drop for Leading<'_> {
    fn drop(&mut self) {
        if !self.finished {
            let mut queue = self.group.queue();
            queue.leading = false;
            queue.waiting.clear();
        }
    }
}

type Outcome = (oneshot::Sender<Result<(), Failure>>, Result<(), Failure>);

/// One transaction for the whole group, a savepoint per save.
fn store_group(conn: &mut Connection, limit: usize, group: Vec<Waiter>) -> Vec<Outcome> {
    if let [_] = group.as_slice() {
        return group
            .into_iter()
            .map(|w| (w.done, store::put_batch(conn, limit, w.ops)))
            .collect();
    }
    let mut tx = match store::write_tx(conn) {
        Ok(tx) => tx,
        Err(e) => return fail_all(group, &e),
    };
    let mut outcomes = Vec::with_capacity(group.len());
    for waiter in group {
        let outcome = match tx.savepoint() {
            Ok(mut savepoint) => {
                // Dropped without `commit`, a savepoint rolls back its own writes.
                savepoint.set_drop_behavior(rusqlite::DropBehavior::Rollback);
                store::apply(&savepoint, limit, waiter.ops)
                    .and_then(|()| savepoint.commit().map_err(Failure::from))
            }
            Err(e) => Err(Failure::from(e)),
        };
        outcomes.push((waiter.done, outcome));
    }
    if let Err(e) = tx.commit() {
        let failure = Failure::from(e);
        return outcomes
            .into_iter()
            .map(|(done, outcome)| (done, outcome.and(Err(copy(&failure)))))
            .collect();
    }
    outcomes
}

fn fail_all(group: Vec<Waiter>, failure: &Failure) -> Vec<Outcome> {
    group
        .into_iter()
        .map(|w| (w.done, Err(copy(failure))))
        .collect()
}

/// The same failure for each save of a group (SQLite's code and message kept).
fn copy(failure: &Failure) -> Failure {
    match failure {
        Failure::Sql(rusqlite::Error::SqliteFailure(code, message)) => {
            Failure::Sql(rusqlite::Error::SqliteFailure(*code, message.clone()))
        }
        other => {
            let message = match other {
                Failure::Sql(e) => e.to_string(),
                Failure::Saver(e) => e.to_string(),
                Failure::Checkpoint(e) => e.to_string(),
            };
            Failure::Sql(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR),
                Some(message),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use stategraph::checkpoint::{CheckpointConfig, PendingWrite};

    use super::*;
    use crate::schema;

    fn writes(thread: &str, text: &str) -> (Waiter, oneshot::Receiver<Result<(), Failure>>) {
        let (done, outcome) = oneshot::channel();
        let config = CheckpointConfig {
            thread_id: thread.to_string(),
            checkpoint_ns: String::new(),
            checkpoint_id: Some("c1".to_string()),
        };
        let write = PendingWrite {
            task_id: "0:a".to_string(),
            idx: 0,
            channel: "update".to_string(),
            value: serde_json::Value::String(text.to_string()),
        };
        let ops = vec![SaveOp::Writes {
            config,
            writes: vec![write],
        }];
        (Waiter { ops, done }, outcome)
    }

    fn stored(conn: &Connection, thread: &str) -> i64 {
        conn.query_row(
            "SELECT COUNT(*) FROM stategraph_writes WHERE thread_id = ?1",
            [thread],
            |r| r.get(0),
        )
        .unwrap()
    }

    #[test]
    fn a_group_is_one_transaction_and_a_failing_save_rolls_back_alone() {
        let mut conn = Connection::open_in_memory().unwrap();
        schema::migrate(&mut conn, Path::new(":memory:"), &schema::CHECKPOINT_TABLES).unwrap();
        let (a, _a) = writes("a", "fits");
        // Over the record limit below: refused.
        let (b, _b) = writes("b", &"x".repeat(200));
        let (c, _c) = writes("c", "fits too");
        let outcomes = store_group(&mut conn, 100, vec![a, b, c]);
        let ok: Vec<bool> = outcomes.iter().map(|(_, o)| o.is_ok()).collect();
        assert_eq!(ok, [true, false, true]);
        assert!(
            matches!(
                &outcomes[1].1,
                Err(Failure::Checkpoint(
                    stategraph::checkpoint::CheckpointError::Oversize { .. }
                ))
            ),
            "the refused save names the oversized record"
        );
        assert_eq!(
            (stored(&conn, "a"), stored(&conn, "b"), stored(&conn, "c")),
            (1, 0, 1)
        );
        // Committed: no transaction is left open on the connection.
        assert!(conn.is_autocommit());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_saves_all_land() {
        let mut conn = Connection::open_in_memory().unwrap();
        schema::migrate(&mut conn, Path::new(":memory:"), &schema::CHECKPOINT_TABLES).unwrap();
        let conn = Arc::new(Mutex::new(conn));
        let group = Arc::new(GroupCommit::default());
        let saves = (0..64).map(|i| {
            let (group, conn) = (group.clone(), conn.clone());
            tokio::spawn(async move {
                let (waiter, _) = writes(&format!("t{i}"), "v");
                group.save(&conn, 1 << 20, waiter.ops).await
            })
        });
        for save in futures::future::join_all(saves).await {
            assert!(matches!(save.unwrap(), Ok(Ok(()))));
        }
        let total: i64 = conn
            .lock()
            .unwrap()
            .query_row("SELECT COUNT(*) FROM stategraph_writes", [], |r| r.get(0))
            .unwrap();
        assert_eq!(total, 64);
        // The leader hands out the last outcomes before it looks at the queue once
        // more and steps down: it may still be on its way out.
        let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while group.queue().leading {
            assert!(
                std::time::Instant::now() < until,
                "the leader never stepped down"
            );
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
    }
}
