//! Making a [`PostgresSaver`]: from a URL (its own pool, TLS as the URL says) or from
//! a pool the user built; the pooled connection of each operation.

use std::sync::Arc;

use deadpool_postgres::{Client, Manager, ManagerConfig, Pool, RecyclingMethod};
use stategraph::checkpoint::{CheckpointError, SaverResult};

use crate::error::{Failure, PostgresError, describe, within};
use crate::lock::Locks;
use crate::options::{PostgresOptions, redacted};
use crate::saver::PostgresSaver;
use crate::schema;
use crate::session::SessionSource;
use crate::tls::{self, Tls};

/// Host, port, database and user of a connection config, for messages.
pub(crate) fn describe_target(pg: &tokio_postgres::Config) -> String {
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

/// The connection settings of `url`, with the options' CA and connect timeout: the
/// config, its TLS and the deadline of each network step.
pub(crate) fn parse(
    url: &str,
    options: &PostgresOptions,
) -> Result<(tokio_postgres::Config, Tls, std::time::Duration), Failure> {
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
    // A zero timeout in the URL means "none" to libpq; here every step keeps one.
    let deadline = match pg.get_connect_timeout() {
        Some(t) if !t.is_zero() => *t,
        _ => options.connect_timeout,
    };
    pg.connect_timeout(deadline);
    if pg.get_application_name().is_none() {
        pg.application_name("stategraph");
    }
    Ok((pg, tls, deadline))
}

/// Where the lock session comes from: the options' `lock_url`, else `default`.
fn lock_source(
    options: &PostgresOptions,
    default: impl FnOnce() -> SessionSource,
) -> Result<SessionSource, Failure> {
    let Some(url) = &options.lock_url else {
        return Ok(default());
    };
    let (pg, tls, deadline) = parse(&url.0, options)?;
    Ok(SessionSource::Connect {
        target: describe_target(&pg),
        pg: Box::new(pg),
        tls,
        deadline,
    })
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
    /// not parse or names an unknown `sslmode`, the CA cannot be read, the server
    /// cannot be reached, refuses the login, refuses TLS or presents a certificate
    /// the mode does not accept, the schema name is not an identifier, or the tables
    /// were written by a newer version of this crate (then nothing is modified).
    pub async fn connect_with(
        url: &str,
        options: PostgresOptions,
    ) -> Result<Self, CheckpointError> {
        Self::connect_inner(url, options)
            .await
            .map_err(|f| f.during("connect"))
    }

    async fn connect_inner(url: &str, options: PostgresOptions) -> Result<Self, Failure> {
        let own = OwnPool::new(url, &options)?;
        let ssl_mode = Some(own.tls.mode);
        let OwnPool {
            pool,
            pg,
            tls,
            target,
            deadline,
        } = own;
        let source = lock_source(&options, || SessionSource::Connect {
            pg: Box::new(pg),
            tls,
            target: target.clone(),
            deadline,
        })?;
        Self::prepare(pool, ssl_mode, source, options, target, deadline).await
    }

    /// Uses `pool`, a pool of the user's (with their TLS settings and pool
    /// configuration), and creates or upgrades the saver's tables as
    /// [`connect_with`](Self::connect_with) does. Build it with the re-exported
    /// [`deadpool_postgres`](crate::deadpool_postgres), whose version this crate uses.
    ///
    /// The saver keeps one of the pool's connections as its lock session for as long as
    /// it is used and saves on the others, so it never holds more than the pool's
    /// `max_size` connections (at least 2) — unless the options give a
    /// [`lock_url`](PostgresOptions::lock_url), whose session is then the one
    /// connection outside the pool. The tables go in the connections' current schema:
    /// set `search_path` in the pool's configuration (`options` =
    /// `-c search_path=name`) to choose it. The options' `pool_size` and `schema` are
    /// not used (and the CA only for a `lock_url`).
    ///
    /// # Errors
    /// As [`connect_with`](Self::connect_with), and
    /// [`PostgresError::PoolTooSmall`] for a pool of fewer than 2 connections without a
    /// `lock_url`, or
    /// [`PostgresError::SchemaWithPool`] when the options name a schema.
    pub async fn from_pool(pool: Pool, options: PostgresOptions) -> Result<Self, CheckpointError> {
        Self::from_pool_inner(pool, options)
            .await
            .map_err(|f| f.during("connect"))
    }

    async fn from_pool_inner(pool: Pool, options: PostgresOptions) -> Result<Self, Failure> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(PostgresError::NoRuntime.into());
        }
        let max_size = pool.status().max_size;
        if max_size < 2 && options.lock_url.is_none() {
            return Err(PostgresError::PoolTooSmall { max_size }.into());
        }
        if let Some(name) = &options.schema {
            return Err(PostgresError::SchemaWithPool { name: name.clone() }.into());
        }
        let target = "the PostgreSQL server of the given pool".to_string();
        let deadline = options.connect_timeout;
        let source = lock_source(&options, || SessionSource::Pool {
            pool: pool.clone(),
            target: target.clone(),
            deadline,
        })?;
        Self::prepare(pool, None, source, options, target, deadline).await
    }

    /// The saver on `pool`, once its tables are ready.
    async fn prepare(
        pool: Pool,
        ssl_mode: Option<tls::SslMode>,
        source: SessionSource,
        options: PostgresOptions,
        target: String,
        deadline: std::time::Duration,
    ) -> Result<Self, Failure> {
        let mut saver = Self {
            pool,
            ssl_mode,
            locks: Arc::new(Locks::new(source)),
            options,
            target,
            schema: String::new(),
            deadline,
        };
        let mut client = saver.client().await?;
        saver.schema = current_schema(
            &client,
            saver.options.schema.as_deref(),
            deadline,
            &saver.target,
        )
        .await?;
        schema::migrate(
            &mut client,
            &saver.schema,
            saver.options.schema.is_some(),
            &schema::CHECKPOINT_TABLES,
        )
        .await?;
        drop(client);
        Ok(saver)
    }

    /// The options it was connected with.
    pub fn options(&self) -> &PostgresOptions {
        &self.options
    }

    /// A pooled connection.
    pub(crate) async fn client(&self) -> Result<Client, Failure> {
        pooled_client(&self.pool, self.ssl_mode, &self.target, self.deadline).await
    }

    /// A pooled connection for `operation`, failing with its name.
    pub(crate) async fn op_client(&self, operation: &'static str) -> SaverResult<Client> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(Failure::from(PostgresError::NoRuntime).during(operation));
        }
        self.client().await.map_err(|f| f.during(operation))
    }
}

/// A pool of the crate's own, connected as the URL and options say.
pub(crate) struct OwnPool {
    pub(crate) pool: Pool,
    /// The connection settings (with the schema's `search_path`), for a lock session.
    pub(crate) pg: tokio_postgres::Config,
    pub(crate) tls: Tls,
    /// Host, port, database and user, for messages.
    pub(crate) target: String,
    /// The deadline of each network step.
    pub(crate) deadline: std::time::Duration,
}

impl OwnPool {
    /// The pool for `url` with the options' TLS, schema, size and connect timeout;
    /// no connection is opened yet.
    pub(crate) fn new(url: &str, options: &PostgresOptions) -> Result<Self, Failure> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(PostgresError::NoRuntime.into());
        }
        let (mut pg, tls, deadline) = parse(url, options)?;
        if let Some(name) = &options.schema {
            if !valid_schema(name) {
                return Err(PostgresError::InvalidSchema { name: name.clone() }.into());
            }
            pg.options(format!("-c search_path={name}"));
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
        Ok(Self {
            pool,
            pg,
            tls,
            target,
            deadline,
        })
    }
}

/// A connection of `pool` within `deadline`, failing with a message naming the step
/// (and, for the crate's own pool, the TLS mode).
pub(crate) async fn pooled_client(
    pool: &Pool,
    ssl_mode: Option<tls::SslMode>,
    target: &str,
    deadline: std::time::Duration,
) -> Result<Client, Failure> {
    let status = pool.status();
    let step = || {
        if status.available == 0 && status.size >= status.max_size {
            "waiting for a free connection of the pool".to_string()
        } else {
            "opening a connection (TCP connect and startup handshake)".to_string()
        }
    };
    let get = async {
        pool.get().await.map_err(|e| match (&e, ssl_mode) {
            (deadpool_postgres::PoolError::Backend(e), Some(mode)) => {
                tls::connect_failure(target, mode, e).into()
            }
            (deadpool_postgres::PoolError::Backend(e), None) => {
                Failure::from(PostgresError::Connect {
                    target: target.to_string(),
                    reason: describe(e),
                })
            }
            (other, _) => PostgresError::Connect {
                target: target.to_string(),
                reason: other.to_string(),
            }
            .into(),
        })
    };
    within(deadline, step, target, get).await
}

/// The schema the tables go in: the options' `schema`, else the connection's
/// current one.
pub(crate) async fn current_schema(
    client: &Client,
    schema: Option<&str>,
    deadline: std::time::Duration,
    target: &str,
) -> Result<String, Failure> {
    if let Some(name) = schema {
        return Ok(name.to_string());
    }
    within(
        deadline,
        || "reading the current schema".into(),
        target,
        async {
            Ok(client
                .query_one("SELECT current_schema()::text", &[])
                .await?
                .try_get::<_, Option<String>>(0)?
                .unwrap_or_else(|| "public".to_string()))
        },
    )
    .await
}
