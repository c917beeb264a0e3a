//! The checkpoint write path of a run: what a run keeps about its thread
//! ([`Persist`]), the background saver that batches `Async` saves, and the sink that
//! saves each finished task's writes as pending writes.

use std::collections::HashMap;
use std::sync::Arc;

use super::error::RunError;
use super::runner::TaskSink;
use super::{config, persist};
use crate::checkpoint::{CheckpointError, CheckpointSaver, PendingWrite, SaveOp, StepRecord};
use crate::compile::Graph;
use crate::node::{BoxFuture, Interrupt, NodeError, NodeOutput, Resume};
use crate::state::{ChangeSet, GraphState};

/// Checkpointing state of a run.
pub(super) struct Persist {
    pub(super) saver: Arc<dyn CheckpointSaver>,
    pub(super) thread: String,
    /// The checkpoint namespace the run writes under (empty for a root graph; a
    /// subgraph's path otherwise).
    pub(super) ns: String,
    /// The last saved checkpoint: parent of the next, owner of pending writes.
    pub(super) parent: Option<String>,
    /// Whether the next checkpoint records the graph's shape: it has no parent, or
    /// its parent was written by another graph version (root namespace only).
    pub(super) shape_due: bool,
    /// Changes not yet in a saved checkpoint.
    pub(super) unsaved: ChangeSet,
    /// Writes saved for tasks of the next step (from the loaded checkpoint).
    pub(super) resumed: HashMap<String, Vec<PendingWrite>>,
    /// Writes waiting for a checkpoint to attach to (`Durability::Exit`).
    pub(super) buffered: Vec<PendingWrite>,
    /// `Durability::Sync`: writes of the step's last finished task, not stored yet.
    /// They are stored with the checkpoint that follows them, in one transaction, or
    /// before anything else of the step runs or is stored (see [`Persist::hold`]).
    pub(super) held: Vec<PendingWrite>,
    /// Saves waiting for the background saver (`Durability::Async`).
    pub(super) queue: Arc<std::sync::Mutex<SaveQueue>>,
    /// The background saver, while one runs.
    pub(super) background: Option<tokio::task::JoinHandle<Result<(), CheckpointError>>>,
    pub(super) durability: config::Durability,
    /// Whether this run changed anything since the last saved checkpoint.
    pub(super) dirty: bool,
    /// Resume commands saved on the loaded checkpoint (the next one's number).
    pub(super) commands: usize,
    /// Attempts of the next step whose writes were rejected (its tasks run again
    /// under new ids).
    pub(super) reruns: u32,
    /// Steps run since the last saved checkpoint, for its metadata.
    pub(super) history: Vec<StepRecord>,
    /// Nodes that wrote in the last step (for `update_state` without `as_node`).
    pub(super) last_writers: Vec<Arc<str>>,
    /// Unanswered interrupts of tasks of the next step, by task id.
    pub(super) waiting: HashMap<String, Interrupt>,
    /// The answer type each waiting task's interrupt expects, by task id.
    pub(super) expects: HashMap<String, String>,
    /// Answers given to tasks of the next step, by task id, in call order.
    pub(super) answers: HashMap<String, Vec<serde_json::Value>>,
    /// The thread's writer lock, for runs that write; background saves hold it too, so
    /// it is released only when the run and every save it started are over.
    pub(super) lock: Option<Arc<crate::checkpoint::ThreadLock>>,
}

/// The most saves an `Async` run keeps queued for the background saver: at this
/// many the run waits until they are stored. Without a bound, a saver slower than
/// the graph (SQLite, PostgreSQL) left the whole thread queued in memory: a long
/// thread's memory grew with its length.
pub(super) const MAX_ASYNC_BACKLOG: usize = 1024;

/// Saves handed to the background saver, in order.
#[derive(Default)]
pub(super) struct SaveQueue {
    pub(super) ops: Vec<SaveOp>,
    /// The size of the last batch taken (at first, the graph's hint): an empty queue
    /// reserves that much on its first save, so a batch of large ops is not copied
    /// over and over as it grows.
    pub(super) last_batch: usize,
    /// Whether a background saver is draining `ops`.
    pub(super) active: bool,
    /// A failed batch: later saves are not attempted (they would leave a gap); the
    /// error ends the run when it is awaited.
    pub(super) failed: Option<CheckpointError>,
}

pub(super) fn lock_queue(
    queue: &std::sync::Mutex<SaveQueue>,
) -> std::sync::MutexGuard<'_, SaveQueue> {
    // Nothing panics while holding the lock, so a poisoned queue is still consistent.
    queue.lock().unwrap_or_else(|e| e.into_inner())
}

impl Persist {
    /// The config naming checkpoint `id` (the latest when `None`) of this run's
    /// thread and namespace.
    pub(super) fn at(&self, id: Option<String>) -> crate::checkpoint::CheckpointConfig {
        persist::config_in(&self.thread, &self.ns, id)
    }

    /// Hands a save to the background saver, starting one if none runs. Everything
    /// queued while a batch is being stored goes into the next batch.
    pub(super) fn enqueue(&mut self, op: SaveOp) {
        {
            let mut queue = lock_queue(&self.queue);
            if queue.ops.capacity() == 0 {
                let hint = queue.last_batch.clamp(4, 1024);
                queue.ops.reserve_exact(hint);
            }
            queue.ops.push(op);
            if queue.active || queue.failed.is_some() {
                return;
            }
            queue.active = true;
        }
        let saver = self.saver.clone();
        let queue = self.queue.clone();
        // The saver holds the thread's lock too: the thread is released only once
        // every save of the run has landed, even if the run is cancelled.
        let lock = self.lock.clone();
        self.background = Some(tokio::spawn(async move {
            let _held = lock;
            loop {
                let ops = {
                    let mut q = lock_queue(&queue);
                    if q.ops.is_empty() {
                        q.active = false;
                        return Ok(());
                    }
                    q.last_batch = q.ops.len();
                    std::mem::take(&mut q.ops)
                };
                if let Err(e) = saver.put_batch(ops).await {
                    let mut q = lock_queue(&queue);
                    q.active = false;
                    q.failed = Some(e);
                    return Ok(());
                }
            }
        }));
    }

    /// [`enqueue`](Self::enqueue), then, once [`MAX_ASYNC_BACKLOG`] saves are
    /// queued, waits until the background saver has stored them (backpressure).
    ///
    /// A saver whose saves are over when called ([`CheckpointSaver::saves_inline`])
    /// stores the save now instead.
    pub(super) async fn enqueue_bounded(&mut self, op: SaveOp) -> Result<(), CheckpointError> {
        if self.saver.saves_inline() {
            return self.saver.put_batch(vec![op]).await;
        }
        self.enqueue(op);
        if lock_queue(&self.queue).ops.len() >= MAX_ASYNC_BACKLOG {
            self.flush().await?;
        }
        Ok(())
    }

    /// Refuses, before anything is saved, a resume value that does not decode as
    /// the type its interrupt expects — where this process knows how to check that
    /// type (see [`crate::answer`]).
    pub(super) fn check_answers(&self, resume: &Resume) -> Result<(), RunError> {
        let answers: Vec<(&String, &serde_json::Value)> = match resume {
            Resume::Value(value) if self.waiting.len() == 1 => {
                self.waiting.keys().map(|task| (task, value)).collect()
            }
            Resume::Map(map) => self
                .waiting
                .iter()
                .filter_map(|(task, i)| map.get(&i.id).map(|value| (task, value)))
                .collect(),
            _ => Vec::new(),
        };
        for (task, value) in answers {
            let (Some(expects), Some(interrupt)) = (self.expects.get(task), self.waiting.get(task))
            else {
                continue;
            };
            if let Some(Err(reason)) = crate::node::answer::check(expects, value) {
                return Err(RunError::InvalidResume {
                    interrupt: interrupt.id.clone(),
                    node: interrupt.node.clone(),
                    expected: expects.clone(),
                    reason,
                });
            }
        }
        Ok(())
    }

    /// Saves pending writes of the current checkpoint as the durability mode says:
    /// now (`Sync`), in the background (`Async`), or with the run's last checkpoint
    /// (`Exit`, or before the thread has one).
    pub(super) async fn save_writes(
        &mut self,
        mut writes: Vec<PendingWrite>,
    ) -> Result<(), RunError> {
        if self.durability == config::Durability::Exit || self.parent.is_none() {
            self.buffered.extend(writes);
            return Ok(());
        }
        let at = self.at(self.parent.clone());
        if self.durability == config::Durability::Async {
            self.enqueue_bounded(SaveOp::Writes { config: at, writes })
                .await?;
        } else {
            if !self.held.is_empty() {
                let mut all = std::mem::take(&mut self.held);
                all.append(&mut writes);
                writes = all;
            }
            self.saver.put_writes(&at, writes).await?;
        }
        Ok(())
    }

    /// Saves a finished task's writes. With `Sync` durability they are held instead:
    /// nothing else runs between a step's last task and its checkpoint, so storing
    /// them together costs one transaction (one `fsync` on SQLite) instead of two and
    /// promises the same — a process that dies in between runs the task again, as it
    /// would had it died while the task ran. Before any other work of the step the
    /// runner calls [`Persist::store_held`], so a task's writes are never held while
    /// another task runs.
    pub(super) async fn hold(&mut self, writes: Vec<PendingWrite>) -> Result<(), RunError> {
        if self.durability == config::Durability::Sync && self.parent.is_some() {
            self.store_held().await?;
            self.held = writes;
            return Ok(());
        }
        self.save_writes(writes).await
    }

    /// Stores held writes now (a no-op when none are held).
    pub(super) async fn store_held(&mut self) -> Result<(), RunError> {
        if self.held.is_empty() {
            return Ok(());
        }
        let writes = std::mem::take(&mut self.held);
        let at = self.at(self.parent.clone());
        self.saver.put_writes(&at, writes).await?;
        Ok(())
    }

    /// Held writes to store with the checkpoint whose parent is `at`, as the batch's
    /// first op.
    pub(super) fn take_held(&mut self, at: &crate::checkpoint::CheckpointConfig) -> Option<SaveOp> {
        (!self.held.is_empty()).then(|| SaveOp::Writes {
            config: at.clone(),
            writes: std::mem::take(&mut self.held),
        })
    }

    /// Stores held writes and waits for the background saver; returns its error, if
    /// a batch failed.
    pub(super) async fn flush(&mut self) -> Result<(), CheckpointError> {
        if !self.held.is_empty() {
            let writes = std::mem::take(&mut self.held);
            let at = self.at(self.parent.clone());
            self.saver.put_writes(&at, writes).await?;
        }
        if let Some(background) = self.background.take() {
            join_background(background).await?;
        }
        let (ops, failed) = {
            let mut queue = lock_queue(&self.queue);
            if !queue.ops.is_empty() {
                queue.last_batch = queue.ops.len();
            }
            (std::mem::take(&mut queue.ops), queue.failed.take())
        };
        if let Some(e) = failed {
            return Err(e);
        }
        if !ops.is_empty() {
            self.saver.put_batch(ops).await?;
        }
        Ok(())
    }
}

async fn join_background(
    handle: tokio::task::JoinHandle<Result<(), CheckpointError>>,
) -> Result<(), CheckpointError> {
    handle.await.map_err(|e| CheckpointError::Storage {
        saver: "runtime",
        operation: "background checkpoint save",
        source: Box::new(e),
    })?
}

/// Saves each finished task's writes as pending writes of the current checkpoint.
pub(super) struct PersistSink<'a, S: GraphState> {
    pub(super) g: &'a Graph<S>,
    pub(super) ids: &'a [String],
    /// Per task: the answers to its interrupts (their count is the next one's index).
    pub(super) answered: &'a [Arc<[serde_json::Value]>],
    pub(super) p: &'a mut Persist,
}

impl<S: GraphState> PersistSink<'_, S> {
    async fn save(&mut self, writes: Vec<PendingWrite>) -> Result<(), RunError> {
        self.p.save_writes(writes).await
    }
}

impl<S: GraphState> TaskSink<S> for PersistSink<'_, S> {
    fn done<'a>(
        &'a mut self,
        task: usize,
        output: &'a NodeOutput<S>,
    ) -> BoxFuture<'a, Result<(), RunError>> {
        Box::pin(async move {
            let ids = self.ids;
            let id = ids.get(task).map_or("", String::as_str);
            let writes = persist::encode_output(self.g, id, output)?;
            self.p.hold(writes).await
        })
    }

    fn holding(&self) -> bool {
        !self.p.held.is_empty()
    }

    fn store_held(&mut self) -> BoxFuture<'_, Result<(), RunError>> {
        Box::pin(self.p.store_held())
    }

    fn failed<'a>(
        &'a mut self,
        task: usize,
        error: &'a NodeError,
    ) -> BoxFuture<'a, Result<(), RunError>> {
        Box::pin(async move {
            let id = self.ids.get(task).cloned().unwrap_or_default();
            let write = PendingWrite {
                task_id: id,
                idx: persist::IDX_ERROR,
                channel: persist::WRITE_ERROR.to_string(),
                value: serde_json::Value::String(error.to_string()),
            };
            self.save(vec![write]).await
        })
    }

    fn interrupted<'a>(
        &'a mut self,
        task: usize,
        interrupt: &'a Interrupt,
        pause: Option<&'a crate::node::answer::Pause>,
    ) -> BoxFuture<'a, Result<(), RunError>> {
        Box::pin(async move {
            let id = self.ids.get(task).cloned().unwrap_or_default();
            // The call that paused: past the answers given, or the one whose answer
            // was refused (its record replaces the one it was first raised with).
            let n = pause.map_or_else(
                || self.answered.get(task).map_or(0, |a| a.len()),
                |p| p.index,
            );
            let mut value = serde_json::to_value(interrupt).map_err(|e| {
                RunError::Checkpoint(CheckpointError::Corrupt {
                    what: format!("interrupt of task {id}"),
                    source: e,
                })
            })?;
            if let (Some(p), Some(record)) = (pause, value.as_object_mut()) {
                record.insert(crate::node::answer::RECORD_EXPECTS.into(), p.expects.into());
                record.insert(crate::node::answer::RECORD_INDEX.into(), p.index.into());
            }
            let write = PendingWrite {
                task_id: id,
                idx: persist::IDX_INTERRUPT + u32::try_from(n).unwrap_or(0),
                channel: persist::WRITE_INTERRUPT.to_string(),
                value,
            };
            self.save(vec![write]).await
        })
    }
}
