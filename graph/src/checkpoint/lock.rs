//! One writer per thread: the guard a saver hands out while a run holds a thread, and
//! an in-process lock table for savers whose storage lives in one process.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::error::CheckpointError;
use super::error::SaverResult;

/// Proof that the holder is the only run writing to a thread; the thread is released
/// when it is dropped.
///
/// Returned by [`CheckpointSaver::lock_thread`](super::CheckpointSaver::lock_thread).
/// A saver builds one around whatever keeps its lock held (a mutex guard, a locked
/// file, a database session), so dropping the guard — or the process dying — frees
/// the thread.
pub struct ThreadLock {
    thread_id: String,
    _held: Box<dyn Send + Sync>,
}

impl ThreadLock {
    /// A guard on `thread_id` that keeps `held` until it is dropped.
    pub fn new(thread_id: impl Into<String>, held: impl Send + Sync + 'static) -> Self {
        Self {
            thread_id: thread_id.into(),
            _held: Box::new(held),
        }
    }

    /// The thread it holds.
    pub fn thread_id(&self) -> &str {
        &self.thread_id
    }
}

impl fmt::Debug for ThreadLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadLock")
            .field("thread_id", &self.thread_id)
            .finish_non_exhaustive()
    }
}

/// Per-thread locks inside one process: what a saver whose storage is not shared with
/// other processes (like [`InMemorySaver`](super::InMemorySaver)) hands out from
/// [`CheckpointSaver::lock_thread`](super::CheckpointSaver::lock_thread).
///
/// Waiting needs a tokio runtime with its time driver; outside one, a busy thread
/// fails at once.
#[derive(Default)]
pub struct LocalThreadLocks {
    threads: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl fmt::Debug for LocalThreadLocks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalThreadLocks").finish_non_exhaustive()
    }
}

impl LocalThreadLocks {
    /// No thread held.
    pub fn new() -> Self {
        Self::default()
    }

    /// Holds `thread_id`, waiting up to `wait` for another holder to let go.
    ///
    /// # Errors
    /// [`CheckpointError::ThreadBusy`] when it is still held after `wait`.
    pub async fn lock(&self, thread_id: &str, wait: Duration) -> SaverResult<ThreadLock> {
        let mutex = {
            // Nothing panics while holding it, so a poisoned map is still consistent.
            let mut threads = self.threads.lock().unwrap_or_else(|e| e.into_inner());
            threads.entry(thread_id.to_string()).or_default().clone()
        };
        let started = Instant::now();
        let busy = || CheckpointError::ThreadBusy {
            thread_id: thread_id.to_string(),
            waited: started.elapsed(),
        };
        let guard = match mutex.clone().try_lock_owned() {
            Ok(guard) => guard,
            Err(_) if wait.is_zero() || tokio::runtime::Handle::try_current().is_err() => {
                return Err(busy());
            }
            Err(_) => tokio::time::timeout(wait, mutex.lock_owned())
                .await
                .map_err(|_| busy())?,
        };
        Ok(ThreadLock::new(thread_id, guard))
    }
}
