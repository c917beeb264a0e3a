//! `SqliteSaver`: opening the database and running each operation on the blocking pool.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::Connection;
use stategraph::BoxFuture;
use stategraph::cache::{CacheEntry, CacheKey, NodeCache};
use stategraph::checkpoint::{
    Checkpoint, CheckpointConfig, CheckpointError, CheckpointMetadata, CheckpointSaver,
    CheckpointTuple, ListOptions, LocalThreadLocks, PendingWrite, SaveOp, SaverResult, StoredValue,
    ThreadInfo, ThreadLock,
};

use crate::error::Failure;
use crate::group::GroupCommit;
use crate::options::SqliteOptions;
use crate::{cache, lock, open, schema, store, threads};

/// A durable [`CheckpointSaver`] in one SQLite database file.
///
/// The file may be shared by several savers, in this process or others: SQLite's
/// write-ahead log lets readers run alongside one writer, and writers wait up to the
/// [busy timeout](SqliteOptions::busy_timeout) for each other. Each operation is one
/// transaction, run on tokio's blocking pool (or inline when called outside a tokio
/// runtime). A saver has one connection, so its operations run one at a time; clones
/// share it.
///
/// A run holds its thread with an operating-system lock on a small file in the
/// directory `<database>.locks` beside the database (one file per thread, named by a
/// hash of its id; `<database>` is the file's canonical path, so a symbolic link or
/// another spelling of the path shares the locks), so runs of one thread in any processes sharing the file take turns
/// (see [`CheckpointSaver::lock_thread`]); a process that dies releases its locks.
/// A released lock removes its file (and the directory once empty), so the directory
/// exists only while some thread is being written, or after a killed run (whose
/// file the next lock of that thread, or `delete_thread`, removes).
#[derive(Clone)]
pub struct SqliteSaver {
    conn: Arc<Mutex<Connection>>,
    path: Option<PathBuf>,
    /// The file's canonical path (symbolic links and `.`/`..` resolved): thread locks
    /// are kept beside it, so every path reaching the file shares them.
    lock_base: Option<PathBuf>,
    options: SqliteOptions,
    /// Thread locks of an in-memory database, which no other process can open.
    local_locks: Arc<LocalThreadLocks>,
    /// Saves waiting to share a transaction (group commit).
    group: Arc<GroupCommit>,
}

impl fmt::Debug for SqliteSaver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteSaver")
            .field("path", &self.path)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl SqliteSaver {
    /// Opens (creating if needed) the database at `path` with default options.
    ///
    /// # Errors
    /// As [`SqliteSaver::open_with`].
    pub fn open(path: impl AsRef<Path>) -> Result<Self, CheckpointError> {
        Self::open_with(path, SqliteOptions::new())
    }

    /// Opens (creating if needed) the database at `path`: switches it to write-ahead
    /// logging and creates or upgrades the saver's tables.
    ///
    /// An empty (0-byte) file is taken for a missing database, as SQLite does, and a
    /// new one is created in it: SQLite itself leaves the file empty between opening
    /// it and writing its first page, so a process opening a new file while another
    /// creates it must not be refused. (The `stategraph` command, which only reads,
    /// reports such a file as empty.)
    ///
    /// # Errors
    /// [`CheckpointError::Storage`] whose source is a
    /// [`SqliteError`](crate::SqliteError): the directory does not exist, the file is
    /// not a readable SQLite database, or its tables were written by a newer version
    /// of this crate (then the file is left as it was).
    pub fn open_with(
        path: impl AsRef<Path>,
        options: SqliteOptions,
    ) -> Result<Self, CheckpointError> {
        let path = path.as_ref();
        let conn = open::open_file(path, &options, &schema::CHECKPOINT_TABLES)
            .map_err(|f| f.during("open"))?;
        // The file exists once its tables do, so this only fails when it was removed
        // since; the lock then falls back to the path as given.
        let lock_base = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
            path: Some(path.to_path_buf()),
            lock_base: Some(lock_base),
            options,
            local_locks: Arc::default(),
            group: Arc::default(),
        })
    }

    /// A private in-memory database, gone when the saver (and its clones) are dropped.
    /// For tests.
    ///
    /// # Errors
    /// [`CheckpointError::Storage`] when SQLite cannot create it.
    pub fn open_in_memory() -> Result<Self, CheckpointError> {
        let options = SqliteOptions::new();
        let path = Path::new(":memory:");
        let open = || -> Result<Connection, Failure> {
            let mut conn = Connection::open_in_memory()?;
            schema::migrate(&mut conn, path, &schema::CHECKPOINT_TABLES)?;
            Ok(conn)
        };
        let conn = open().map_err(|f| f.during("open"))?;
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
            path: None,
            lock_base: None,
            options,
            local_locks: Arc::default(),
            group: Arc::default(),
        })
    }

    /// The database file, or `None` for an in-memory database.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The options it was opened with.
    pub fn options(&self) -> &SqliteOptions {
        &self.options
    }

    /// Stores `ops` in a transaction shared with the saves of other threads that
    /// arrive meanwhile (see [`GroupCommit`]).
    fn write(&self, operation: &'static str, ops: Vec<SaveOp>) -> BoxFuture<'_, SaverResult<()>> {
        Box::pin(async move {
            let limit = self.options.max_record_bytes;
            match self.group.save(&self.conn, limit, ops).await {
                Ok(outcome) => outcome.map_err(|f| f.during(operation)),
                Err(stopped) => Err(CheckpointError::Storage {
                    saver: "sqlite",
                    operation,
                    source: Box::new(stopped),
                }),
            }
        })
    }

    /// Runs `work` on the connection on the blocking pool.
    fn run<'a, T, F>(&'a self, operation: &'static str, work: F) -> BoxFuture<'a, SaverResult<T>>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection, usize) -> Result<T, Failure> + Send + 'static,
    {
        let conn = self.conn.clone();
        let limit = self.options.max_record_bytes;
        let job = move || {
            // A panic mid-operation rolls its transaction back as it unwinds, so the
            // connection behind a poisoned lock is still consistent.
            let mut conn = conn.lock().unwrap_or_else(|e| e.into_inner());
            work(&mut conn, limit).map_err(|f| f.during(operation))
        };
        Box::pin(async move {
            open::off_executor(job)
                .await
                .map_err(|e| CheckpointError::Storage {
                    saver: "sqlite",
                    operation,
                    source: Box::new(e),
                })?
        })
    }
}

impl CheckpointSaver for SqliteSaver {
    fn get_tuple<'a>(
        &'a self,
        config: &'a CheckpointConfig,
    ) -> BoxFuture<'a, SaverResult<Option<CheckpointTuple>>> {
        let config = config.clone();
        self.run("get_tuple", move |conn, limit| {
            store::get_tuple(conn, limit, &config)
        })
    }

    fn list<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        options: &'a ListOptions,
    ) -> BoxFuture<'a, SaverResult<Vec<CheckpointTuple>>> {
        let config = config.clone();
        let options = options.clone();
        self.run("list", move |conn, limit| {
            store::list(conn, limit, &config, &options)
        })
    }

    fn put<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
    ) -> BoxFuture<'a, SaverResult<CheckpointConfig>> {
        let stored = CheckpointConfig {
            thread_id: config.thread_id.clone(),
            checkpoint_ns: config.checkpoint_ns.clone(),
            checkpoint_id: Some(checkpoint.id.clone()),
        };
        let op = SaveOp::Checkpoint {
            config: config.clone(),
            checkpoint,
            metadata,
        };
        Box::pin(async move {
            self.write("put", vec![op]).await?;
            Ok(stored)
        })
    }

    fn put_writes<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        writes: Vec<PendingWrite>,
    ) -> BoxFuture<'a, SaverResult<()>> {
        let op = SaveOp::Writes {
            config: config.clone(),
            writes,
        };
        self.write("put_writes", vec![op])
    }

    fn channel_history<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        channel: &'a str,
        from: u64,
        to: u64,
    ) -> BoxFuture<'a, SaverResult<Vec<(u64, StoredValue)>>> {
        let config = config.clone();
        let channel = channel.to_string();
        self.run("channel_history", move |conn, limit| {
            store::channel_history(conn, limit, &config, &channel, from, to)
        })
    }

    fn max_version<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        channel: &'a str,
    ) -> BoxFuture<'a, SaverResult<Option<u64>>> {
        let config = config.clone();
        let channel = channel.to_string();
        self.run("max_version", move |conn, _| {
            store::max_version(conn, &config, &channel)
        })
    }

    fn list_threads(&self) -> BoxFuture<'_, SaverResult<Vec<ThreadInfo>>> {
        self.run("list_threads", threads::list_threads)
    }

    fn list_namespaces<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, SaverResult<Vec<String>>> {
        let thread_id = thread_id.to_string();
        self.run("list_namespaces", move |conn, _| {
            threads::list_namespaces(conn, &thread_id)
        })
    }

    fn delete_thread<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, SaverResult<()>> {
        let thread_id = thread_id.to_string();
        let db = self.lock_base.clone();
        self.run("delete_thread", move |conn, _| {
            threads::delete_thread(conn, &thread_id)?;
            // A lock file a killed process left behind goes too (one a live run
            // holds stays).
            if let Some(db) = db {
                lock::remove_stale(&db, &thread_id);
            }
            Ok(())
        })
    }

    fn copy_thread<'a>(&'a self, from: &'a str, to: &'a str) -> BoxFuture<'a, SaverResult<()>> {
        let (from, to) = (from.to_string(), to.to_string());
        self.run("copy_thread", move |conn, _| {
            threads::copy_thread(conn, &from, &to)
        })
    }

    fn put_batch<'a>(&'a self, ops: Vec<SaveOp>) -> BoxFuture<'a, SaverResult<()>> {
        self.write("put_batch", ops)
    }

    fn prune<'a>(&'a self, thread_id: &'a str, keep: usize) -> BoxFuture<'a, SaverResult<()>> {
        let thread_id = thread_id.to_string();
        self.run("prune", move |conn, limit| {
            threads::prune(conn, limit, &thread_id, keep)
        })
    }

    /// On a file, an operating-system lock on a file per thread in the directory
    /// `<database>.locks` beside it (created when needed), so a run holds the thread
    /// against runs in every process using the file; the lock dies with its process.
    /// In memory, a lock inside this process.
    fn lock_thread<'a>(
        &'a self,
        thread_id: &'a str,
        wait: Duration,
    ) -> BoxFuture<'a, SaverResult<ThreadLock>> {
        match &self.lock_base {
            Some(path) => Box::pin(lock::lock_file(path.clone(), thread_id.to_string(), wait)),
            None => Box::pin(self.local_locks.lock(thread_id, wait)),
        }
    }
}

/// Cache entries live in the same file, in `stategraph_cache`, so a restarted process
/// reuses the nodes' recorded runs; `delete_thread` removes a thread's entries too.
impl NodeCache for SqliteSaver {
    fn get<'a>(&'a self, key: &'a CacheKey) -> BoxFuture<'a, SaverResult<Option<CacheEntry>>> {
        let key = key.clone();
        self.run("cache get", move |conn, limit| {
            cache::cache_get(conn, limit, &key)
        })
    }

    fn put<'a>(&'a self, key: &'a CacheKey, entry: CacheEntry) -> BoxFuture<'a, SaverResult<()>> {
        let key = key.clone();
        self.run("cache put", move |conn, limit| {
            cache::cache_put(conn, limit, &key, &entry)
        })
    }

    fn clear<'a>(
        &'a self,
        thread_id: &'a str,
        node: Option<&'a str>,
    ) -> BoxFuture<'a, SaverResult<usize>> {
        let thread_id = thread_id.to_string();
        let node = node.map(str::to_string);
        self.run("cache clear", move |conn, _| {
            cache::cache_clear(conn, &thread_id, node.as_deref())
        })
    }
}
