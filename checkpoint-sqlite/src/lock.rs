//! One writer per thread across processes: an exclusive operating-system lock on a
//! file per thread, in a directory beside the database. The operating system drops the
//! lock when its process ends, however it ends; a released lock removes its file (and
//! the directory once it is empty), so only a killed process leaves one behind, and
//! the next lock of that thread reuses it.

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

/// A held thread lock. Its file is removed when it is released (while still held),
/// so a database's `<db>.locks/` holds files only for threads being written.
struct HeldFile {
    // Dropped after `drop` has removed the path: the lock is released last.
    _file: File,
    path: PathBuf,
}

impl Drop for HeldFile {
    fn drop(&mut self) {
        // A waiter that opened this file before it was removed finds, once it gets
        // the lock, that the path names another file (or none) and tries again.
        let _ = std::fs::remove_file(&self.path);
        if let Some(dir) = self.path.parent() {
            // Only succeeds when no other thread's file is left.
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// Whether `file` is still the file at `path` (not one removed by a previous
/// holder after this process opened it).
#[cfg(unix)]
fn still_at(file: &File, path: &Path) -> std::io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let held = file.metadata()?;
    match std::fs::metadata(path) {
        Ok(now) => Ok(now.dev() == held.dev() && now.ino() == held.ino()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// Without inode numbers to compare, lock files are kept (see [`HeldFile`]).
#[cfg(not(unix))]
fn still_at(_file: &File, _path: &Path) -> std::io::Result<bool> {
    Ok(true)
}

/// Opens (creating) the lock file at `path`, and its directory if another holder
/// just removed it.
fn open_lock_file(path: &Path) -> std::io::Result<File> {
    let mut tries = 0;
    loop {
        if let Some(dir) = path.parent() {
            match std::fs::create_dir_all(dir) {
                // The directory existed when `create_dir_all` tried to create it and
                // was gone when it checked: the last holder removed it in between.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && tries < 100 => {
                    tries += 1;
                    continue;
                }
                done => done?,
            }
        }
        match OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
        {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && tries < 100 => tries += 1,
            done => return done,
        }
    }
}

/// Locks the thread's file, trying every [`POLL`] until `wait` has passed.
fn lock_blocking(db: &Path, thread_id: &str, wait: Duration) -> Result<HeldFile, Failure> {
    let path = lock_path(db, thread_id);
    let failed = |source| SqliteError::Lock {
        thread_id: thread_id.to_string(),
        path: path.clone(),
        source,
    };
    let mut file = open_lock_file(&path).map_err(failed)?;
    let started = Instant::now();
    loop {
        match file.try_lock() {
            Ok(()) if still_at(&file, &path).map_err(failed)? => {
                return Ok(HeldFile { _file: file, path });
            }
            // Locked a file its last holder removed on release: take the new one.
            Ok(()) => {
                file = open_lock_file(&path).map_err(failed)?;
                continue;
            }
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

/// Removes the lock file of `thread_id` if no run holds it (a file left by a killed
/// process); does nothing otherwise.
pub(crate) fn remove_stale(db: &Path, thread_id: &str) {
    let path = lock_path(db, thread_id);
    if !path.exists() {
        return;
    }
    // Released (and so removed) at once when the lock is free.
    drop(lock_blocking(db, thread_id, Duration::ZERO));
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
    crate::open::off_executor(job)
        .await
        .map_err(|e| CheckpointError::Storage {
            saver: "sqlite",
            operation: "lock_thread",
            source: Box::new(e),
        })?
}
