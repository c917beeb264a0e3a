//! `PostgresStore`: the long-term memory [`Store`] in a PostgreSQL database, shared
//! by every process connected to it.

mod rows;
mod search;
mod sql;

/// The batch planning and ranking every store backend shares.
use stategraph::store::backend as plan;
use std::fmt;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, SystemTime};

use deadpool_postgres::{Client, Pool};
use stategraph::BoxFuture;
use stategraph::store::{IndexConfig, Store, StoreError, StoreOp, StoreOutput, TtlConfig};

use crate::connect::{OwnPool, current_schema, pooled_client};
use crate::error::{Failure, PostgresError};
use crate::options::PostgresOptions;
use crate::schema;
use crate::tls::SslMode;
pub use sql::STORE_TABLE_VERSION;

/// How many times a batch is run again after the server broke a deadlock or a
/// serialization conflict by aborting it.
const RETRIES: usize = 5;

/// A [`Store`] (namespaced JSON items with filters, time-to-lives and semantic
/// search, shared by every thread) in a PostgreSQL database, shared by any number of
/// processes.
///
/// The store has its own tables (`stategraph_store_items`,
/// `stategraph_store_vectors`) in the user's default schema or the one named by
/// [`PostgresOptions::schema`], beside a saver's or alone, versioned apart from the
/// saver's ([`STORE_TABLE_VERSION`], as `store_schema_version` in
/// `stategraph_meta`); connecting migrates them under an advisory lock, so workers
/// starting together migrate once. It connects as
/// [`PostgresSaver`](crate::PostgresSaver) does (the URL's `sslmode` and CA, the
/// options' pool size and connect timeout). Each batch is one transaction on a pooled
/// connection; its writers take an advisory lock per item in a fixed order, so
/// concurrent batches never deadlock on each other. Clones share the pool.
///
/// Vectors are stored as little-endian `f32` blobs (`bytea`) and searched by an
/// exact scan of the items under the search's prefix; the pgvector extension is not
/// needed (see `docs/store.md`).
#[derive(Clone)]
pub struct PostgresStore {
    pool: Pool,
    ssl_mode: Option<SslMode>,
    target: String,
    deadline: Duration,
    schema: String,
    index: Option<IndexConfig>,
    ttl: TtlConfig,
    /// The background sweep task, shared by the clones; started by the first batch
    /// or sweep.
    sweeper: Arc<Mutex<Option<Sweeper>>>,
    /// Dropped with the last clone, which ends the sweep task.
    alive: Arc<()>,
}

impl fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresStore")
            .field("target", &self.target)
            .field("schema", &self.schema)
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

impl PostgresStore {
    /// Connects to the database at `url` (`postgres://user:password@host:5432/db`)
    /// with default options.
    ///
    /// # Errors
    /// As [`PostgresStore::connect_with`].
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        Self::connect_with(url, PostgresOptions::new()).await
    }

    /// Connects to the database at `url` and creates or upgrades the store's tables.
    /// The options' schema, pool size, connect timeout and CA apply; the lock URL,
    /// lock poll interval and record limit do not (values are limited to
    /// [`MAX_VALUE_BYTES`](stategraph::store::MAX_VALUE_BYTES)).
    ///
    /// # Errors
    /// [`StoreError::Backend`] whose source is a [`PostgresError`], as for
    /// [`PostgresSaver::connect_with`](crate::PostgresSaver::connect_with), and
    /// [`PostgresError::NewerStoreTables`] when the store's tables were written by a
    /// newer version of this crate (then nothing is modified).
    pub async fn connect_with(url: &str, options: PostgresOptions) -> Result<Self, StoreError> {
        Self::connect_inner(url, &options)
            .await
            .map_err(|f| f.store("connect"))
    }

    async fn connect_inner(url: &str, options: &PostgresOptions) -> Result<Self, Failure> {
        let own = OwnPool::new(url, options)?;
        let mut store = Self {
            pool: own.pool,
            ssl_mode: Some(own.tls.mode),
            target: own.target,
            deadline: own.deadline,
            schema: String::new(),
            index: None,
            ttl: TtlConfig::default(),
            sweeper: Arc::default(),
            alive: Arc::default(),
        };
        let mut client = store.client().await?;
        store.schema = current_schema(
            &client,
            options.schema.as_deref(),
            store.deadline,
            &store.target,
        )
        .await?;
        schema::migrate(
            &mut client,
            &store.schema,
            options.schema.is_some(),
            &sql::STORE_TABLES,
        )
        .await?;
        Ok(store)
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
    /// items every interval, from the first batch or sweep until the last clone of the
    /// store is dropped (reads never return expired items either way).
    #[must_use]
    pub fn with_ttl(mut self, ttl: TtlConfig) -> Self {
        self.ttl = ttl;
        self
    }

    /// The schema holding the store's tables.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// The index it embeds with, if any.
    pub fn index(&self) -> Option<&IndexConfig> {
        self.index.as_ref()
    }

    /// How it expires items.
    pub fn ttl(&self) -> &TtlConfig {
        &self.ttl
    }

    async fn client(&self) -> Result<Client, Failure> {
        pooled_client(&self.pool, self.ssl_mode, &self.target, self.deadline).await
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
        let alive: Weak<()> = Arc::downgrade(&self.alive);
        let (pool, ssl_mode, target, deadline) = (
            self.pool.clone(),
            self.ssl_mode,
            self.target.clone(),
            self.deadline,
        );
        let task = runtime.spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            ticks.tick().await;
            loop {
                ticks.tick().await;
                if alive.upgrade().is_none() {
                    break;
                }
                // A failed sweep is tried again at the next tick; reads hide expired
                // items meanwhile.
                if let Ok(mut client) = pooled_client(&pool, ssl_mode, &target, deadline).await {
                    let _ = sweep_on(&mut client).await;
                }
            }
        });
        *sweeper = Some(Sweeper(task.abort_handle()));
    }

    async fn run_batch(&self, ops: Vec<StoreOp>) -> Result<Vec<StoreOutput>, StoreError> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(Failure::from(PostgresError::NoRuntime).store("batch"));
        }
        self.ensure_sweeper();
        let planned = plan::plan(ops, self.index.as_ref(), &self.ttl).await?;
        let mut client = self.client().await.map_err(|f| f.store("batch"))?;
        let mut tries = 0;
        loop {
            match sql::apply(&mut client, &self.schema, &planned, SystemTime::now()).await {
                Err(failure) if again(&failure, &mut tries) => {}
                done => return done.map_err(|f| f.store("batch")),
            }
        }
    }

    async fn run_sweep(&self) -> Result<usize, StoreError> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(Failure::from(PostgresError::NoRuntime).store("sweep"));
        }
        self.ensure_sweeper();
        let mut client = self.client().await.map_err(|f| f.store("sweep"))?;
        sweep_on(&mut client).await.map_err(|f| f.store("sweep"))
    }
}

/// Whether to run again a transaction that failed with `failure`: the server
/// aborted it to break a deadlock or a serialization conflict, fewer than
/// [`RETRIES`] times so far.
fn again(failure: &Failure, tries: &mut usize) -> bool {
    if failure.is_retryable() && *tries < RETRIES {
        *tries += 1;
        true
    } else {
        false
    }
}

/// Deletes the expired items, trying again after a deadlock.
async fn sweep_on(client: &mut Client) -> Result<usize, Failure> {
    let mut tries = 0;
    loop {
        match sql::sweep(client, SystemTime::now()).await {
            Err(failure) if again(&failure, &mut tries) => {}
            done => return done,
        }
    }
}

impl Store for PostgresStore {
    fn batch<'a>(
        &'a self,
        ops: Vec<StoreOp>,
    ) -> BoxFuture<'a, Result<Vec<StoreOutput>, StoreError>> {
        Box::pin(self.run_batch(ops))
    }

    fn sweep(&self) -> BoxFuture<'_, Result<usize, StoreError>> {
        Box::pin(self.run_sweep())
    }
}
