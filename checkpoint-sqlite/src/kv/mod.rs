//! `SqliteStore`: the long-term memory [`Store`] in a SQLite file, beside the
//! checkpoints or in a file of its own.

mod rows;
mod search;
mod sql;

/// The batch planning and ranking every store backend shares.
use stategraph::store::backend as plan;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use rusqlite::Connection;
use stategraph::BoxFuture;
use stategraph::store::{IndexConfig, Store, StoreError, StoreOp, StoreOutput, TtlConfig};

use crate::error::Failure;
use crate::open;
use crate::options::SqliteOptions;
pub use sql::STORE_TABLE_VERSION;

/// A [`Store`] (namespaced JSON items with filters, time-to-lives and semantic
/// search, shared by every thread) in a SQLite database file.
///
/// The file may be the one a [`SqliteSaver`](crate::SqliteSaver) keeps checkpoints
/// in, or one of its own: the store has its own tables (`stategraph_store_items`,
/// `stategraph_store_vectors`), versioned apart from the saver's
/// ([`STORE_TABLE_VERSION`], as `store_schema_version` in `stategraph_meta`). Like
/// the saver, it switches the file to write-ahead logging, waits up to the
/// [busy timeout](SqliteOptions::busy_timeout) for other connections (in this or other
/// processes), and runs each batch as one transaction on tokio's blocking pool (or
/// inline outside a runtime). A store has one connection; clones share it.
///
/// Vectors are stored as little-endian `f32` blobs and searched by an exact scan of
/// the items under the search's prefix (see `docs/store.md` for the measurements
/// behind that choice).
#[derive(Clone)]
pub struct SqliteStore {
    conn: Arc<Mutex<Connection>>,
    path: Option<PathBuf>,
    index: Option<IndexConfig>,
    ttl: TtlConfig,
    /// The background sweep task, shared by the clones; started by the first batch
    /// or sweep inside a tokio runtime.
    sweeper: Arc<Mutex<Option<Sweeper>>>,
}

impl fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .field("index", &self.index)
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

/// The background sweep task; ends when the last clone of its store is dropped.
struct Sweeper(tokio::task::AbortHandle);

impl Drop for Sweeper {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `path` with default options.
    ///
    /// # Errors
    /// As [`SqliteStore::open_with`].
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Self::open_with(path, SqliteOptions::new())
    }

    /// Opens (creating if needed) the database at `path`: switches it to write-ahead
    /// logging and creates or upgrades the store's tables (leaving any other tables,
    /// a saver's included, as they are). The options' busy timeout and synchronous
    /// mode apply; their record limit does not (values are limited to
    /// [`MAX_VALUE_BYTES`](stategraph::store::MAX_VALUE_BYTES)).
    ///
    /// # Errors
    /// [`StoreError::Backend`] whose source is a [`SqliteError`](crate::SqliteError):
    /// the directory does not exist, the file is not a SQLite database, or the
    /// store's tables were written by a newer version of this crate (then the file is
    /// left as it was).
    pub fn open_with(path: impl AsRef<Path>, options: SqliteOptions) -> Result<Self, StoreError> {
        let path = path.as_ref();
        let conn =
            open::open_file(path, &options, &sql::STORE_TABLES).map_err(|f| f.store("open"))?;
        Ok(Self::with_connection(conn, Some(path.to_path_buf())))
    }

    /// A private in-memory database, gone when the store (and its clones) are
    /// dropped. For tests.
    ///
    /// # Errors
    /// [`StoreError::Backend`] when SQLite cannot create it.
    pub fn open_in_memory() -> Result<Self, StoreError> {
        let open = || -> Result<Connection, Failure> {
            let mut conn = Connection::open_in_memory()?;
            crate::schema::migrate(&mut conn, Path::new(":memory:"), &sql::STORE_TABLES)?;
            Ok(conn)
        };
        let conn = open().map_err(|f| f.store("open"))?;
        Ok(Self::with_connection(conn, None))
    }

    fn with_connection(conn: Connection, path: Option<PathBuf>) -> Self {
        Self {
            conn: Arc::new(Mutex::new(conn)),
            path,
            index: None,
            ttl: TtlConfig::default(),
            sweeper: Arc::default(),
        }
    }

    /// Embeds what is put with `index`, so searches with a `query` rank by
    /// similarity. Items stored before keep the vectors (or none) they were put with.
    #[must_use]
    pub fn with_index(mut self, index: IndexConfig) -> Self {
        self.index = Some(index);
        self
    }

    /// Expires items as `ttl` says. With a
    /// [`sweep_interval`](TtlConfig::sweep_interval), a tokio task deletes expired
    /// items every interval, from the first batch or sweep run inside a runtime until
    /// the last clone of the store is dropped (reads never return expired items
    /// either way).
    #[must_use]
    pub fn with_ttl(mut self, ttl: TtlConfig) -> Self {
        self.ttl = ttl;
        self
    }

    fn ensure_sweeper(&self) {
        let Some(every) = self.ttl.sweep_interval else {
            return;
        };
        let mut sweeper = self.sweeper.lock().unwrap_or_else(|e| e.into_inner());
        if sweeper.is_some() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let conn = Arc::downgrade(&self.conn);
        let task = runtime.spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            ticks.tick().await;
            loop {
                ticks.tick().await;
                let Some(conn) = conn.upgrade() else { break };
                // A failed sweep is tried again at the next tick; reads hide expired
                // items meanwhile.
                let _ = run_on(conn, "sweep", |conn| sql::sweep(conn, SystemTime::now())).await;
            }
        });
        *sweeper = Some(Sweeper(task.abort_handle()));
    }

    /// The database file, or `None` for an in-memory database.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The index it embeds with, if any.
    pub fn index(&self) -> Option<&IndexConfig> {
        self.index.as_ref()
    }

    /// How it expires items.
    pub fn ttl(&self) -> &TtlConfig {
        &self.ttl
    }
}

/// Runs `work` on `conn` on the blocking pool.
async fn run_on<T, F>(
    conn: Arc<Mutex<Connection>>,
    op: &'static str,
    work: F,
) -> Result<T, StoreError>
where
    T: Send + 'static,
    F: FnOnce(&mut Connection) -> Result<T, Failure> + Send + 'static,
{
    let job = move || {
        // A panic mid-batch rolls its transaction back as it unwinds, so the
        // connection behind a poisoned lock is still consistent.
        let mut conn = conn.lock().unwrap_or_else(|e| e.into_inner());
        work(&mut conn).map_err(|f| f.store(op))
    };
    open::off_executor(job)
        .await
        .map_err(|e| StoreError::Backend {
            backend: "sqlite",
            op: op.to_string(),
            source: Box::new(e),
        })?
}

impl Store for SqliteStore {
    fn batch<'a>(
        &'a self,
        ops: Vec<StoreOp>,
    ) -> BoxFuture<'a, Result<Vec<StoreOutput>, StoreError>> {
        Box::pin(async move {
            self.ensure_sweeper();
            let planned = plan::plan(ops, self.index.as_ref(), &self.ttl).await?;
            let path = self
                .path
                .clone()
                .unwrap_or_else(|| PathBuf::from(":memory:"));
            run_on(self.conn.clone(), "batch", move |conn| {
                sql::apply(conn, &path, planned, SystemTime::now())
            })
            .await
        })
    }

    fn sweep(&self) -> BoxFuture<'_, Result<usize, StoreError>> {
        self.ensure_sweeper();
        Box::pin(run_on(self.conn.clone(), "sweep", |conn| {
            sql::sweep(conn, SystemTime::now())
        }))
    }
}
