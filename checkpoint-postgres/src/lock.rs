//! One writer per thread across processes and machines: session-level advisory locks
//! keyed by a hash of the thread id, all held on one lock session per saver.
//!
//! The lock session is a connection of its own, driven by a thread of the saver's own
//! (so it outlives whichever runtime asked for a lock) that serves lock and unlock
//! requests one at a time. Advisory locks are re-entrant within a session, so the
//! session keeps a table of the keys it holds and reports a key held in this process
//! as busy. When the session ends — the saver and every lock are dropped, the process
//! dies, or the server or network drops the connection — the server releases its locks.
//!
//! A lost session must not let two writers in. Taking a thread's lock also gives the
//! thread a new *fence* (a random id in `stategraph_thread_locks`), and each save of
//! a thread this process holds checks, in the save's own transaction, that the fence
//! is still the one its lock wrote, and share-locks that row (see [`plan_check`]). A
//! process that takes the thread after the session was lost writes a new fence first:
//! it waits for a save already past its check to commit, and every later save of the
//! old holder fails. Letting go of a lock deletes its fence. When this process
//! notices the session ended, its holders' locks are marked lost and their saves fail
//! at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use stategraph::checkpoint::{CheckpointError, SaverResult, ThreadLock};
use tokio::sync::{mpsc, oneshot};

use crate::error::{Failure, PostgresError};
use crate::session::{Fence, Session, SessionSource};

/// The advisory lock key of `thread_id` in `schema`: 64 bits of a hash, so distinct
/// threads share a key only by a negligible chance (and then merely take turns).
pub(crate) fn lock_key(schema: &str, thread_id: &str) -> i64 {
    let mut hasher = Sha256::new();
    hasher.update(b"stategraph-thread\0");
    hasher.update(schema.as_bytes());
    hasher.update(b"\0");
    hasher.update(thread_id.as_bytes());
    let digest = hasher.finalize();
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    i64::from_be_bytes(bytes)
}

/// A lock this process holds.
struct Holder {
    token: u64,
    /// The fence its lock wrote.
    fence: Fence,
    /// The backend of the lock session holding it.
    pid: i32,
    /// Why the lock is no longer held, once the session holding it has ended.
    lost: Option<String>,
    /// The highest `seq` of each of the thread's namespaces, as this holder's own
    /// saves found it (see [`take_seq`]).
    seqs: HashMap<String, i64>,
}

/// The locks this saver holds, by key.
#[derive(Default)]
struct Table {
    held: HashMap<i64, Holder>,
    next_token: u64,
}

impl Table {
    /// Marks every lock held on the session `pid` as lost.
    fn lose(&mut self, pid: i32, why: &str) {
        for holder in self.held.values_mut() {
            if holder.pid == pid && holder.lost.is_none() {
                holder.lost = Some(why.to_string());
            }
        }
    }
}

enum Request {
    /// Takes `key` under `token` if it is free: whether it was taken.
    TryLock {
        key: i64,
        /// Chosen by the caller, so a caller that is dropped before it reads the
        /// answer can still release what the answer granted.
        token: u64,
        thread_id: String,
        /// The fence table, qualified by its schema.
        fences: String,
        reply: oneshot::Sender<Result<bool, Failure>>,
    },
    Unlock {
        key: i64,
        token: u64,
    },
}

/// The lock session of a saver and its clones.
pub(crate) struct Locks {
    source: SessionSource,
    table: Arc<Mutex<Table>>,
    /// The service thread's queue, once started.
    service: Mutex<Option<mpsc::UnboundedSender<Request>>>,
}

fn lock_table(table: &Mutex<Table>) -> MutexGuard<'_, Table> {
    // Nothing panics while holding it, so a poisoned table is still consistent.
    table.lock().unwrap_or_else(|e| e.into_inner())
}

impl Locks {
    pub(crate) fn new(source: SessionSource) -> Self {
        Self {
            source,
            table: Arc::default(),
            service: Mutex::new(None),
        }
    }

    /// The service's queue, starting the service if it is not running.
    fn queue(&self) -> Result<mpsc::UnboundedSender<Request>, Failure> {
        let mut service = self.service.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(queue) = service.as_ref().filter(|q| !q.is_closed()) {
            return Ok(queue.clone());
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| PostgresError::LockService {
                reason: e.to_string(),
            })?;
        let (queue, requests) = mpsc::unbounded_channel();
        let source = self.source.clone();
        let table = self.table.clone();
        std::thread::Builder::new()
            .name("stategraph-postgres-locks".into())
            .spawn(move || runtime.block_on(serve(source, table, requests)))
            .map_err(|e| PostgresError::LockService {
                reason: e.to_string(),
            })?;
        *service = Some(queue.clone());
        Ok(queue)
    }
}

/// Serves lock requests on one session (opened when first needed, and again after it
/// ends) until every sender is gone.
async fn serve(
    source: SessionSource,
    table: Arc<Mutex<Table>>,
    mut requests: mpsc::UnboundedReceiver<Request>,
) {
    let mut session: Option<Session> = None;
    while let Some(request) = requests.recv().await {
        match request {
            Request::TryLock {
                key,
                token,
                thread_id,
                fences,
                reply,
            } => {
                let at = Wanted {
                    key,
                    token,
                    thread_id: &thread_id,
                    fences: &fences,
                };
                let locked = try_lock(&source, &table, &mut session, at).await;
                // A caller that stopped waiting (its future was dropped) never gets a
                // guard to release the lock with: release it here. (One dropped after
                // this answer was sent releases it through its `Asking` guard.)
                if let Err(Ok(true)) = reply.send(locked) {
                    release(&table, &mut session, key, token).await;
                }
            }
            Request::Unlock { key, token } => release(&table, &mut session, key, token).await,
        }
    }
    if let Some(s) = session {
        s.close().await;
    }
}

/// Lets go of `key` if `token` holds it.
async fn release(table: &Mutex<Table>, session: &mut Option<Session>, key: i64, token: u64) {
    // The fence, if the session still holds the lock (a lost lock is not held).
    let release = {
        let mut t = lock_table(table);
        match t.held.get(&key) {
            Some(holder) if holder.token == token => {
                let held =
                    holder.lost.is_none() && session.as_ref().map(Session::pid) == Some(holder.pid);
                t.held.remove(&key).filter(|_| held).map(|h| h.fence)
            }
            _ => None,
        }
    };
    if let (Some(fence), Some(s)) = (release, session.as_ref())
        && let Err(e) = s.unlock(key, &fence).await
    {
        lock_table(table).lose(s.pid(), &e);
        *session = None;
    }
}

/// A lock asked for: its key, the token it is asked under, its thread and the fence
/// table.
struct Wanted<'a> {
    key: i64,
    token: u64,
    thread_id: &'a str,
    fences: &'a str,
}

async fn try_lock(
    source: &SessionSource,
    locks: &Mutex<Table>,
    session: &mut Option<Session>,
    Wanted {
        key,
        token,
        thread_id,
        fences,
    }: Wanted<'_>,
) -> Result<bool, Failure> {
    if locks_held_here(locks, key) {
        return Ok(false);
    }
    // A session that has ended is replaced; a query failing on one that seemed alive
    // is tried once more on a new one.
    for attempt in 0..2 {
        if let Some(s) = session.as_ref().filter(|s| s.is_closed()) {
            lock_table(locks).lose(s.pid(), "the lock session's connection closed");
            *session = None;
        }
        let s = match session {
            Some(s) => s,
            None => session.insert(Session::open(source, thread_id).await?),
        };
        match s.try_lock(key, thread_id, fences).await {
            Ok(None) => return Ok(false),
            Ok(Some(fence)) => {
                let mut t = lock_table(locks);
                let pid = s.pid();
                t.held.insert(
                    key,
                    Holder {
                        token,
                        fence,
                        pid,
                        lost: None,
                        seqs: HashMap::new(),
                    },
                );
                return Ok(true);
            }
            Err(e) => {
                lock_table(locks).lose(s.pid(), &e);
                *session = None;
                if attempt == 1 {
                    return Err(PostgresError::LockSession { reason: e }.into());
                }
            }
        }
    }
    Ok(false)
}

fn locks_held_here(locks: &Mutex<Table>, key: i64) -> bool {
    lock_table(locks).held.contains_key(&key)
}

/// Held while a run holds its thread: dropping it asks the service to unlock.
struct Guard {
    key: i64,
    token: u64,
    queue: mpsc::UnboundedSender<Request>,
}

/// Armed while a lock request is out: a caller dropped before it read the answer
/// (a cancelled run) asks the service to let go of whatever the request took. The
/// service serves requests in order, so the unlock comes after the request.
struct Asking {
    key: i64,
    token: u64,
    queue: mpsc::UnboundedSender<Request>,
    armed: bool,
}

impl Drop for Asking {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.queue.send(Request::Unlock {
                key: self.key,
                token: self.token,
            });
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        // Without a service (it only stops when no guard is left), nothing is held.
        let _ = self.queue.send(Request::Unlock {
            key: self.key,
            token: self.token,
        });
    }
}

/// The thread locks of this process, as the saver uses them.
impl Locks {
    /// Takes the lock of `thread_id` (in tables of `schema`), asking again every `poll`
    /// until `wait` has passed.
    pub(crate) async fn lock_thread(
        &self,
        schema: &str,
        thread_id: &str,
        wait: Duration,
        poll: Duration,
    ) -> Result<ThreadLock, Failure> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(PostgresError::NoRuntime.into());
        }
        let key = lock_key(schema, thread_id);
        let fences = format!(
            "\"{}\".stategraph_thread_locks",
            schema.replace('"', "\"\"")
        );
        let started = Instant::now();
        loop {
            let queue = self.queue()?;
            let (reply, answer) = oneshot::channel();
            let stopped = || {
                Failure::from(PostgresError::LockService {
                    reason: "the lock service stopped".into(),
                })
            };
            let token = {
                let mut t = lock_table(&self.table);
                t.next_token += 1;
                t.next_token
            };
            queue
                .send(Request::TryLock {
                    key,
                    token,
                    thread_id: thread_id.to_string(),
                    fences: fences.clone(),
                    reply,
                })
                .map_err(|_| stopped())?;
            let mut asking = Asking {
                key,
                token,
                queue,
                armed: true,
            };
            let taken = answer.await.map_err(|_| stopped());
            // The answer was read: the caller owns the outcome.
            asking.armed = false;
            let queue = asking.queue.clone();
            if taken?? {
                return Ok(ThreadLock::new(thread_id, Guard { key, token, queue }));
            }
            let waited = started.elapsed();
            if waited >= wait {
                return Err(CheckpointError::ThreadBusy {
                    thread_id: thread_id.to_string(),
                    waited,
                }
                .into());
            }
            tokio::time::sleep(poll.min(wait - waited)).await;
        }
    }

    /// [`Locks::lock_thread`] for the saver's `lock_thread`.
    pub(crate) async fn lock(
        &self,
        schema: &str,
        thread_id: &str,
        wait: Duration,
        poll: Duration,
    ) -> SaverResult<ThreadLock> {
        self.lock_thread(schema, thread_id, wait, poll)
            .await
            .map_err(|f| f.during("lock_thread"))
    }

    /// Before a save of `thread_id` (in tables of `schema`): when this process holds the
    /// thread, the lock and the fence its lock wrote, which the save checks is still the
    /// thread's, in its own transaction (see [`Locks::lost_on_server`]); an error when
    /// the lock was lost; `None` when this process does not hold the thread.
    pub(crate) fn held(
        &self,
        schema: &str,
        thread_id: &str,
    ) -> Result<Option<(Held, String)>, Failure> {
        let key = lock_key(schema, thread_id);
        let t = lock_table(&self.table);
        match t.held.get(&key) {
            None => Ok(None),
            Some(Holder {
                lost: Some(reason), ..
            }) => Err(lost(thread_id, reason)),
            Some(holder) => Ok(Some((
                Held {
                    key,
                    token: holder.token,
                    pid: holder.pid,
                },
                holder.fence.id.clone(),
            ))),
        }
    }

    /// The `seq` the next new checkpoint of namespace `ns` of a thread held as `held`
    /// takes, when the holder's own saves know the namespace's highest: no other process
    /// writes the thread while this one holds it (a save checks the fence), so the highest
    /// is the one this holder's last save found, and the server need not look it up.
    /// `None` when a save has yet to find it: the first after taking the lock, or after a
    /// save that stored several checkpoints of the thread at once.
    ///
    /// Taken, not read: until the save that gives the number reports the namespace's
    /// highest back ([`Locks::saw_seq`]), the next save finds it again. A save that fails, or
    /// whose caller stops waiting for it, may have been stored all the same.
    pub(crate) fn take_seq(&self, held: Held, ns: &str) -> Option<i64> {
        let mut t = lock_table(&self.table);
        let holder = t
            .held
            .get_mut(&held.key)
            .filter(|h| h.token == held.token)?;
        holder.seqs.remove(ns).map(|seq| seq + 1)
    }

    /// After a save of a thread held as `held`: `seq`, which the save returned, is the
    /// highest of the thread's namespace `ns` (see [`crate::rows::Numbering`]).
    pub(crate) fn saw_seq(&self, held: Held, ns: &str, seq: i64) {
        let mut t = lock_table(&self.table);
        if let Some(holder) = t.held.get_mut(&held.key).filter(|h| h.token == held.token) {
            let top = holder.seqs.entry(ns.to_string()).or_insert(seq);
            *top = (*top).max(seq);
        }
    }

    /// Before a save that stores several checkpoints of a thread held as `held`: the
    /// highest `seq` of its namespaces is found again after it.
    pub(crate) fn forget_seqs(&self, held: Held) {
        let mut t = lock_table(&self.table);
        if let Some(holder) = t.held.get_mut(&held.key).filter(|h| h.token == held.token) {
            holder.seqs.clear();
        }
    }

    /// The server found another fence on `thread_id` than its lock wrote: another process
    /// took the thread, so the lock session `pid` has ended, and every lock of it is lost.
    pub(crate) fn lost_on_server(&self, thread_id: &str, pid: i32) -> Failure {
        let reason = "another process has taken the thread since the lock session ended";
        lock_table(&self.table).lose(pid, reason);
        lost(thread_id, reason)
    }
}

/// Which lock of this process a save checks: its key, the holder's token and the
/// backend of its lock session.
#[derive(Clone, Copy)]
pub(crate) struct Held {
    pub(crate) key: i64,
    pub(crate) token: u64,
    pub(crate) pid: i32,
}

fn lost(thread_id: &str, reason: &str) -> Failure {
    PostgresError::LockLost {
        thread_id: thread_id.to_string(),
        reason: reason.to_string(),
    }
    .into()
}

#[cfg(test)]
mod tests {
    use super::lock_key;

    #[test]
    fn keys_are_stable_and_depend_on_schema_and_thread() {
        assert_eq!(lock_key("public", "t"), lock_key("public", "t"));
        assert_ne!(lock_key("public", "t"), lock_key("public", "u"));
        assert_ne!(lock_key("public", "t"), lock_key("other", "t"));
        // Processes of different builds must agree on the key: it may never change.
        assert_eq!(lock_key("public", "t"), 1_947_032_391_631_118_727);
    }
}
