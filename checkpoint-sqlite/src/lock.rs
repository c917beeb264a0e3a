//! One writer per thread across processes: an exclusive operating-system lock on a
//! file per thread, in a directory beside the database. The operating system drops the
//! lock when its process ends, however it ends.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use stategraph::checkpoint::{CheckpointError, SaverResult, ThreadLock};

use crate::error::{Failure, SqliteError};

/// How often a waiting run tries the lock again.
const POLL: Duration = Duration::from_millis(20);

/// The directory holding the lock files of the database at `db`: `<db>.locks`.
pub(crate) fn lock_dir(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_os_string();
    name.push(".locks");
    PathBuf::from(name)
}

/// The lock file of `thread_id`: named by a hash, so any thread id makes a valid name.
fn lock_path(db: &Path, thread_id: &str) -> PathBuf {
    let digest = Sha256::digest(thread_id.as_bytes());
    let name: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    lock_dir(db).join(format!("{name}.lock"))
}

/// Locks the thread's file, trying every [`POLL`] until `wait` has passed.
fn lock_blocking(db: &Path, thread_id: &str, wait: Duration) -> Result<File, Failure> {
    let path = lock_path(db, thread_id);
    let failed = |source| SqliteError::Lock {
        thread_id: thread_id.to_string(),
        path: path.clone(),
        source,
    };
    std::fs::create_dir_all(lock_dir(db)).map_err(failed)?;
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(failed)?;
    let started = Instant::now();
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(TryLockError::WouldBlock) => {}
            Err(TryLockError::Error(e)) => return Err(failed(e).into()),
        }
        let waited = started.elapsed();
        if waited >= wait {
            return Err(CheckpointError::ThreadBusy {
                thread_id: thread_id.to_string(),
                waited,
            }
            .into());
        }
        std::thread::sleep(POLL.min(wait - waited));
    }
}

/// Holds `thread_id` of the database at `db` (on the blocking pool when inside a
/// tokio runtime).
pub(crate) async fn lock_file(
    db: PathBuf,
    thread_id: String,
    wait: Duration,
) -> SaverResult<ThreadLock> {
    let job = move || {
        lock_blocking(&db, &thread_id, wait)
            .map(|file| ThreadLock::new(thread_id, file))
            .map_err(|f| f.during("lock_thread"))
    };
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => handle
            .spawn_blocking(job)
            .await
            .map_err(|e| CheckpointError::Storage {
                saver: "sqlite",
                operation: "lock_thread",
                source: Box::new(e),
            })?,
        Err(_) => job(),
    }
}
