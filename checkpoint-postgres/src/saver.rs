//! `PostgresSaver`: connecting, the pool, and each operation on a pooled connection.

use std::fmt;
use std::time::Duration;

use crate::error::{Failure, PostgresError, describe, within};
use crate::tls::{CaSource, Tls};
use crate::{cache, lock, schema, store, threads, tls};
use deadpool_postgres::{Client, Manager, ManagerConfig, Pool, RecyclingMethod};
use stategraph::BoxFuture;
use stategraph::cache::{CacheEntry, CacheKey, NodeCache};
use stategraph::checkpoint::{
    Checkpoint, CheckpointConfig, CheckpointError, CheckpointMetadata, CheckpointSaver,
    CheckpointTuple, ListOptions, PendingWrite, SaveOp, SaverResult, StoredValue, ThreadInfo,
    ThreadLock,
};

/// Settings of a [`PostgresSaver`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use]
pub struct PostgresOptions {
    pub(crate) max_record_bytes: usize,
    pub(crate) pool_size: usize,
    pub(crate) connect_timeout: Duration,
    pub(crate) schema: Option<String>,
    pub(crate) lock_poll: Duration,
    pub(crate) ca: Option<CaSource>,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        Self {
            max_record_bytes: 64 << 20,
            pool_size: 8,
            connect_timeout: Duration::from_secs(10),
            schema: None,
            lock_poll: Duration::from_millis(25),
            ca: None,
        }
    }
}

impl PostgresOptions {
    /// A 64 MiB record limit, a pool of 8 connections, a 10-second connect timeout, the
    /// tables in the user's default schema.
    pub fn new() -> Self {
        Self::default()
    }

    /// The largest stored record, in bytes of JSON: a checkpoint, its metadata, one
    /// channel value or one pending write. Larger records are refused when written and
    /// when read, as [`CheckpointError::Oversize`].
    pub fn max_record_bytes(mut self, bytes: usize) -> Self {
        self.max_record_bytes = bytes;
        self
    }

    /// Most connections the saver keeps open at once (at least 1). Each running
    /// thread also holds one more connection for its lock while it runs.
    pub fn pool_size(mut self, connections: usize) -> Self {
        self.pool_size = connections.max(1);
        self
    }

    /// How long each network step may take before it fails naming the step: opening
    /// a connection (TCP connect and startup handshake), waiting for a pooled one,
    /// opening a thread's lock session. A `connect_timeout` in the URL takes
    /// precedence. Default 10 seconds.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Keeps the saver's tables in this schema (created when missing) instead of the
    /// user's default one: savers on different schemas of one database are independent.
    /// A plain identifier: ASCII letters, digits and `_`.
    pub fn schema(mut self, name: impl Into<String>) -> Self {
        self.schema = Some(name.into());
        self
    }

    /// Trusts the CA certificates in this PEM file for the server's certificate (as
    /// `sslrootcert=/path` in the URL, which takes precedence). With a CA given,
    /// `sslmode=prefer` and `require` check the certificate's chain as `verify-ca`
    /// does (as libpq); without one, `verify-ca` and `verify-full` trust the operating
    /// system's CA store.
    pub fn ca_file(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.ca = Some(CaSource::File(path.into()));
        self
    }

    /// Trusts the CA certificates in these PEM bytes, as [`ca_file`](Self::ca_file)
    /// does those in a file.
    pub fn ca_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.ca = Some(CaSource::Pem(pem.into()));
        self
    }

    /// How often a run waiting for a busy thread asks again whether it is free.
    pub fn lock_poll_interval(mut self, interval: Duration) -> Self {
        self.lock_poll = interval.max(Duration::from_millis(1));
        self
    }
}

/// A durable [`CheckpointSaver`] in a PostgreSQL database, shared by any number of
/// processes on any number of machines.
///
/// Each operation is one transaction on a connection of the saver's pool (reads see
/// one snapshot). Clones share the pool. The saver is async-native: use it inside a
/// tokio runtime with its I/O and time drivers (`#[tokio::main]`, or
/// `invoke_blocking`).
///
/// A run holds its thread with a session-level advisory lock on a connection of its
/// own (see [`CheckpointSaver::lock_thread`]): another process running the same thread
/// waits for it, and if the holder dies its session ends and the lock goes with it.
#[derive(Clone)]
pub struct PostgresSaver {
    pub(crate) pool: Pool,
    pub(crate) pg: tokio_postgres::Config,
    /// How connections use TLS.
    pub(crate) tls: Tls,
    pub(crate) options: PostgresOptions,
    pub(crate) target: String,
    /// The schema holding the tables (part of each thread's lock key).
    pub(crate) schema: String,
    /// The deadline of each network step: the URL's `connect_timeout`, else the
    /// options'.
    pub(crate) deadline: Duration,
}

impl fmt::Debug for PostgresSaver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresSaver")
            .field("target", &self.target)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// `url` with the password (if any) replaced by `***`.
fn redacted(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
        return url.to_string();
    };
    let rest = &url[scheme_end..];
    let Some(at) = rest.rfind('@') else {
        return url.to_string();
    };
    match rest[..at].find(':') {
        Some(colon) => format!(
            "{}{}:***{}",
            &url[..scheme_end],
            &rest[..colon],
            &rest[at..]
        ),
        None => url.to_string(),
    }
}

/// Host, port, database and user of a connection config, for messages.
fn describe_target(pg: &tokio_postgres::Config) -> String {
    use tokio_postgres::config::Host;
    let hosts: Vec<String> = pg
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let port = pg
                .get_ports()
                .get(i)
                .or(pg.get_ports().first())
                .copied()
                .unwrap_or(5432);
            match h {
                Host::Tcp(name) => format!("{name}:{port}"),
                Host::Unix(path) => format!("{}:{port}", path.display()),
            }
        })
        .collect();
    let hosts = if hosts.is_empty() {
        "localhost:5432".to_string()
    } else {
        hosts.join(",")
    };
    format!(
        "{hosts} (database `{}`, user `{}`)",
        pg.get_dbname().unwrap_or("default"),
        pg.get_user().unwrap_or("default")
    )
}

fn valid_schema(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= 63
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl PostgresSaver {
    /// Connects to the database at `url` (`postgres://user:password@host:5432/db`)
    /// with default options.
    ///
    /// # Errors
    /// As [`PostgresSaver::connect_with`].
    pub async fn connect(url: &str) -> Result<Self, CheckpointError> {
        Self::connect_with(url, PostgresOptions::new()).await
    }

    /// Connects to the database at `url` and creates or upgrades the saver's tables
    /// (in one transaction; workers starting together migrate once).
    ///
    /// # Errors
    /// [`CheckpointError::Storage`] whose source is a [`PostgresError`]: the URL does
    /// not parse, the server cannot be reached or refuses the login, the schema name is
    /// not an identifier, or the tables were written by a newer version of this crate
    /// (then nothing is modified).
    pub async fn connect_with(
        url: &str,
        options: PostgresOptions,
    ) -> Result<Self, CheckpointError> {
        Self::connect_inner(url, options)
            .await
            .map_err(|f| f.during("connect"))
    }

    async fn connect_inner(url: &str, options: PostgresOptions) -> Result<Self, Failure> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(PostgresError::NoRuntime.into());
        }
        // `sslmode` and `sslrootcert` are read here: tokio-postgres knows too few modes.
        let (rest, tls_params) = tls::split_params(url);
        let mut pg: tokio_postgres::Config =
            rest.parse()
                .map_err(|e: tokio_postgres::Error| PostgresError::InvalidUrl {
                    url: redacted(url),
                    reason: describe(&e),
                })?;
        let tls = Tls::new(&tls_params, options.ca.as_ref())?;
        tls.apply(&mut pg);
        if let Some(name) = &options.schema {
            if !valid_schema(name) {
                return Err(PostgresError::InvalidSchema { name: name.clone() }.into());
            }
            pg.options(format!("-c search_path={name}"));
        }
        // A zero timeout in the URL means "none" to libpq; here every step keeps one.
        let deadline = match pg.get_connect_timeout() {
            Some(t) if !t.is_zero() => *t,
            _ => options.connect_timeout,
        };
        pg.connect_timeout(deadline);
        if pg.get_application_name().is_none() {
            pg.application_name("stategraph");
        }
        let target = describe_target(&pg);
        let manager = Manager::from_config(
            pg.clone(),
            tls.connector.clone(),
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(options.pool_size)
            .build()
            .map_err(|e| PostgresError::Connect {
                target: target.clone(),
                reason: e.to_string(),
            })?;
        let mut saver = Self {
            pool,
            pg,
            tls,
            options,
            target,
            schema: String::new(),
            deadline,
        };
        let mut client = saver.client().await?;
        saver.schema = match &saver.options.schema {
            Some(name) => name.clone(),
            None => {
                within(
                    deadline,
                    || "reading the current schema".into(),
                    &saver.target,
                    async {
                        Ok(client
                            .query_one("SELECT current_schema()::text", &[])
                            .await?
                            .try_get::<_, Option<String>>(0)?
                            .unwrap_or_else(|| "public".to_string()))
                    },
                )
                .await?
            }
        };
        schema::migrate(&mut client, &saver.schema, saver.options.schema.is_some()).await?;
        drop(client);
        Ok(saver)
    }

    /// The options it was connected with.
    pub fn options(&self) -> &PostgresOptions {
        &self.options
    }

    /// A pooled connection.
    pub(crate) async fn client(&self) -> Result<Client, Failure> {
        let status = self.pool.status();
        let step = || {
            if status.available == 0 && status.size >= status.max_size {
                "waiting for a free connection of the pool".to_string()
            } else {
                "opening a connection (TCP connect and startup handshake)".to_string()
            }
        };
        within(self.deadline, step, &self.target, self.pooled()).await
    }

    async fn pooled(&self) -> Result<Client, Failure> {
        self.pool.get().await.map_err(|e| match &e {
            deadpool_postgres::PoolError::Backend(e) => {
                tls::connect_failure(&self.target, self.tls.mode, e).into()
            }
            other => PostgresError::Connect {
                target: self.target.clone(),
                reason: other.to_string(),
            }
            .into(),
        })
    }

    /// A pooled connection for `operation`, failing with its name.
    async fn op_client(&self, operation: &'static str) -> SaverResult<Client> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(Failure::from(PostgresError::NoRuntime).during(operation));
        }
        self.client().await.map_err(|f| f.during(operation))
    }
}

impl CheckpointSaver for PostgresSaver {
    fn get_tuple<'a>(
        &'a self,
        config: &'a CheckpointConfig,
    ) -> BoxFuture<'a, SaverResult<Option<CheckpointTuple>>> {
        Box::pin(async move {
            let mut client = self.op_client("get_tuple").await?;
            store::get_tuple(&mut client, self.options.max_record_bytes, config)
                .await
                .map_err(|f| f.during("get_tuple"))
        })
    }

    fn list<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        options: &'a ListOptions,
    ) -> BoxFuture<'a, SaverResult<Vec<CheckpointTuple>>> {
        Box::pin(async move {
            let mut client = self.op_client("list").await?;
            store::list(&mut client, self.options.max_record_bytes, config, options)
                .await
                .map_err(|f| f.during("list"))
        })
    }

    fn put<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
    ) -> BoxFuture<'a, SaverResult<CheckpointConfig>> {
        Box::pin(async move {
            let mut client = self.op_client("put").await?;
            store::put(
                &mut client,
                self.options.max_record_bytes,
                config,
                checkpoint,
                &metadata,
            )
            .await
            .map_err(|f| f.during("put"))
        })
    }

    fn put_batch<'a>(&'a self, ops: Vec<SaveOp>) -> BoxFuture<'a, SaverResult<()>> {
        Box::pin(async move {
            let mut client = self.op_client("put_batch").await?;
            store::put_batch(&mut client, self.options.max_record_bytes, ops)
                .await
                .map_err(|f| f.during("put_batch"))
        })
    }

    fn put_writes<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        writes: Vec<PendingWrite>,
    ) -> BoxFuture<'a, SaverResult<()>> {
        Box::pin(async move {
            let mut client = self.op_client("put_writes").await?;
            store::put_writes(&mut client, self.options.max_record_bytes, config, &writes)
                .await
                .map_err(|f| f.during("put_writes"))
        })
    }

    fn channel_history<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        channel: &'a str,
        from: u64,
        to: u64,
    ) -> BoxFuture<'a, SaverResult<Vec<(u64, StoredValue)>>> {
        Box::pin(async move {
            let mut client = self.op_client("channel_history").await?;
            store::channel_history(
                &mut client,
                self.options.max_record_bytes,
                config,
                channel,
                from,
                to,
            )
            .await
            .map_err(|f| f.during("channel_history"))
        })
    }

    fn max_version<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        channel: &'a str,
    ) -> BoxFuture<'a, SaverResult<Option<u64>>> {
        Box::pin(async move {
            let mut client = self.op_client("max_version").await?;
            store::max_version(&mut client, config, channel)
                .await
                .map_err(|f| f.during("max_version"))
        })
    }

    fn list_threads(&self) -> BoxFuture<'_, SaverResult<Vec<ThreadInfo>>> {
        Box::pin(async move {
            let mut client = self.op_client("list_threads").await?;
            threads::list_threads(&mut client, self.options.max_record_bytes)
                .await
                .map_err(|f| f.during("list_threads"))
        })
    }

    fn delete_thread<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, SaverResult<()>> {
        Box::pin(async move {
            let mut client = self.op_client("delete_thread").await?;
            threads::delete_thread(&mut client, thread_id)
                .await
                .map_err(|f| f.during("delete_thread"))
        })
    }

    fn copy_thread<'a>(&'a self, from: &'a str, to: &'a str) -> BoxFuture<'a, SaverResult<()>> {
        Box::pin(async move {
            let mut client = self.op_client("copy_thread").await?;
            threads::copy_thread(&mut client, from, to)
                .await
                .map_err(|f| f.during("copy_thread"))
        })
    }

    /// A session-level advisory lock (`pg_try_advisory_lock`) on a 64-bit hash of the
    /// schema and thread id, held on a connection of its own (outside the pool) and
    /// tried again every [poll interval](PostgresOptions::lock_poll_interval) until
    /// `wait` has passed. The server releases it when the guard is dropped or the
    /// holding process dies (or, through TCP keepalives, within about a minute of its
    /// machine becoming unreachable).
    fn lock_thread<'a>(
        &'a self,
        thread_id: &'a str,
        wait: Duration,
    ) -> BoxFuture<'a, SaverResult<ThreadLock>> {
        Box::pin(lock::lock(self, thread_id, wait))
    }

    fn prune<'a>(&'a self, thread_id: &'a str, keep: usize) -> BoxFuture<'a, SaverResult<()>> {
        Box::pin(async move {
            let mut client = self.op_client("prune").await?;
            threads::prune(&mut client, self.options.max_record_bytes, thread_id, keep)
                .await
                .map_err(|f| f.during("prune"))
        })
    }
}

/// Cache entries live in the same database, in `stategraph_cache`, so every worker
/// reuses the nodes' recorded runs; `delete_thread` removes a thread's entries too.
impl NodeCache for PostgresSaver {
    fn get<'a>(&'a self, key: &'a CacheKey) -> BoxFuture<'a, SaverResult<Option<CacheEntry>>> {
        Box::pin(async move {
            let mut client = self.op_client("cache get").await?;
            cache::cache_get(&mut client, self.options.max_record_bytes, key)
                .await
                .map_err(|f| f.during("cache get"))
        })
    }

    fn put<'a>(&'a self, key: &'a CacheKey, entry: CacheEntry) -> BoxFuture<'a, SaverResult<()>> {
        Box::pin(async move {
            let mut client = self.op_client("cache put").await?;
            cache::cache_put(&mut client, self.options.max_record_bytes, key, &entry)
                .await
                .map_err(|f| f.during("cache put"))
        })
    }

    fn clear<'a>(
        &'a self,
        thread_id: &'a str,
        node: Option<&'a str>,
    ) -> BoxFuture<'a, SaverResult<usize>> {
        Box::pin(async move {
            let mut client = self.op_client("cache clear").await?;
            cache::cache_clear(&mut client, thread_id, node)
                .await
                .map_err(|f| f.during("cache clear"))
        })
    }
}
