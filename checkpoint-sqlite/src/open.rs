//! Opening a database file for the saver or the store, and running blocking SQLite
//! work off the async executor.

use std::path::Path;
use std::time::Duration;

use rusqlite::Connection;

use crate::error::{Failure, SqliteError};
use crate::options::SqliteOptions;
use crate::schema::{self, Tables};

/// Runs `job` on tokio's blocking pool when inside a runtime, else inline.
///
/// # Errors
/// The pool's error when the job panicked or the runtime is shutting down.
pub(crate) async fn off_executor<T, F>(job: F) -> Result<T, tokio::task::JoinError>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => handle.spawn_blocking(job).await,
        Err(_) => Ok(job()),
    }
}

/// Opens (creating if needed) the database at `path`, switches it to write-ahead
/// logging and brings `tables` up to date.
pub(crate) fn open_file(
    path: &Path,
    options: &SqliteOptions,
    tables: &Tables,
) -> Result<Connection, Failure> {
    if let Some(dir) = path.parent()
        && !dir.as_os_str().is_empty()
        && !dir.is_dir()
    {
        return Err(SqliteError::MissingDirectory {
            dir: dir.to_path_buf(),
        }
        .into());
    }
    // Switching a new file to write-ahead logging can fail with "database is locked"
    // at once, without SQLite's busy handler, while another process creates the same
    // file; the whole sequence is tried again (on a new connection) until the busy
    // timeout has passed.
    let started = std::time::Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        match open_once(path, options, tables) {
            Err(failure) if failure.is_busy() && started.elapsed() < options.busy_timeout => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            done => return done,
        }
    }
}

/// Opens `path`, sets it up and brings its tables up to date, once.
fn open_once(path: &Path, options: &SqliteOptions, tables: &Tables) -> Result<Connection, Failure> {
    let open_err = |source| SqliteError::Open {
        path: path.to_path_buf(),
        source,
    };
    let mut conn = Connection::open(path).map_err(open_err)?;
    conn.busy_timeout(options.busy_timeout).map_err(open_err)?;
    schema::check(&conn, path, tables).map_err(|f| match f {
        Failure::Sql(e) => open_err(e).into(),
        other => other,
    })?;
    // Takes effect only on a new file. Appended items are often about a kilobyte;
    // 8 KiB pages waste less of each page on them than the default 4 KiB.
    conn.pragma_update(None, "page_size", 8192)
        .map_err(open_err)?;
    // Returns the mode in effect; a file system without shared memory keeps the
    // rollback journal, which is slower but still correct.
    let _mode: String = conn
        .pragma_update_and_check(None, "journal_mode", "wal", |row| row.get(0))
        .map_err(open_err)?;
    conn.pragma_update(None, "synchronous", options.synchronous.pragma())
        .map_err(open_err)?;
    schema::migrate(&mut conn, path, tables)?;
    Ok(conn)
}
