//! [`Server`]: the graphs to serve, where runs and checkpoints are kept, the limits;
//! [`Running`]: a bound server and its workers, until shut down.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::cors::Cors;
use stategraph::checkpoint::CheckpointSaver;
use stategraph::store::Store;
use stategraph::{CompileOptions, GraphState, StateGraph};
use stategraph_postgres::{PostgresOptions, PostgresSaver, PostgresStore};
use stategraph_sqlite::{SqliteSaver, SqliteStore};
use tokio::sync::watch;

use crate::app::{App, Assistant, Limits};
use crate::db::Db;
use crate::db::postgres::PgDb;
use crate::db::sqlite::SqliteDb;
use crate::error::ServerError;
use crate::hub::Hub;
use crate::served::{ContextSpec, Entry, Served, schemas_of};

mod options;

type Compile = Box<
    dyn FnOnce(Arc<dyn CheckpointSaver>, Arc<dyn Store>) -> Result<Arc<dyn Served>, ServerError>
        + Send,
>;

enum Backend {
    Sqlite(PathBuf),
    Postgres(String, Box<PostgresOptions>),
}

/// An Agent Protocol / LangGraph Platform server for typed graphs.
///
/// Each graph is served as an assistant named like the graph; runs are queued in
/// the database and executed by this process's workers (and, on PostgreSQL, by
/// every process serving the same database). See the [crate docs](crate).
pub struct Server {
    graphs: Vec<(String, Compile)>,
    backend: Backend,
    jobs: usize,
    api_key: Option<String>,
    cors: Cors,
    text_plain_origins: Vec<String>,
    allowed_hosts: Vec<String>,
    limits: Limits,
    worker_id: Option<String>,
    webhooks: crate::Webhooks,
}

impl Default for Server {
    fn default() -> Self {
        Self::new()
    }
}

impl Server {
    /// The SQLite file used unless [`Server::sqlite`] (or a PostgreSQL database) says
    /// otherwise.
    pub const DEFAULT_SQLITE: &'static str = "stategraph-server.sqlite";

    /// A server with no graphs yet, on [`Server::DEFAULT_SQLITE`], 10 jobs.
    pub fn new() -> Self {
        Self {
            graphs: Vec::new(),
            backend: Backend::Sqlite(PathBuf::from(Self::DEFAULT_SQLITE)),
            jobs: 10,
            api_key: None,
            cors: Cors::local(),
            text_plain_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            limits: Limits {
                body_bytes: 2 * 1024 * 1024,
                runs_per_thread_per_minute: 600,
                lease: Duration::from_secs(30),
                event_retention: Duration::from_secs(3600),
                body_read: Duration::from_secs(30),
                connections: crate::listen::ConnLimits {
                    max_connections: crate::listen::default_max_connections(),
                    header_read: Duration::from_secs(30),
                },
                requests_per_client_per_minute: None,
                strict_input: false,
                thread_ttl: None,
            },
            worker_id: None,
            webhooks: crate::Webhooks::new(),
        }
    }

    /// Serves `graph` under `name` (its `graph_id`, and the name its assistant is
    /// found by). The server compiles it with its own checkpointer and store.
    /// `S: JsonSchema` gives the `/assistants/{id}/schemas` route its schemas.
    #[must_use]
    pub fn graph<S: GraphState + schemars::JsonSchema>(
        self,
        name: impl Into<String>,
        graph: StateGraph<S>,
    ) -> Self {
        self.graph_with(name, graph, CompileOptions::new())
    }

    /// [`Server::graph`] with compile options (migrations, breakpoints, a cache); the
    /// server sets their checkpointer and store.
    #[must_use]
    pub fn graph_with<S: GraphState + schemars::JsonSchema>(
        self,
        name: impl Into<String>,
        graph: StateGraph<S>,
        options: CompileOptions,
    ) -> Self {
        self.add_graph(name.into(), graph, options, None)
    }

    /// [`Server::graph_with`] for a graph whose nodes read a typed run context `C`
    /// ([`NodeContext::context`](stategraph::NodeContext::context)): a run's
    /// `context` is decoded into `C` when the run is created (a 422 naming
    /// `$.context` when it does not decode), and `C`'s JSON Schema is the
    /// assistant's `context_schema`. (Without it, a run's `context` reaches the nodes
    /// as JSON: `ctx.context::<serde_json::Value>()`.)
    ///
    /// ```
    /// use stategraph::prelude::*;
    /// use stategraph_server::Server;
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Caller {
    ///     user_id: String,
    /// }
    ///
    /// #[derive(GraphState, schemars::JsonSchema, Clone, Debug, Default)]
    /// struct Greeting {
    ///     text: String,
    /// }
    ///
    /// #[node]
    /// async fn greet(_: &Greeting, ctx: &NodeContext) -> Result<GreetingUpdate, NodeError> {
    ///     let caller: &Caller = ctx.context()?;
    ///     Ok(Greeting::update().text(format!("Hello, {}!", caller.user_id)))
    /// }
    ///
    /// let mut graph = StateGraph::<Greeting>::new();
    /// graph.add_node(greet).add_edge(START, greet);
    /// let server = Server::new().graph_with_context::<Greeting, Caller>(
    ///     "greeter",
    ///     graph,
    ///     CompileOptions::new(),
    /// );
    /// # drop(server);
    /// ```
    #[must_use]
    pub fn graph_with_context<S, C>(
        self,
        name: impl Into<String>,
        graph: StateGraph<S>,
        options: CompileOptions,
    ) -> Self
    where
        S: GraphState + schemars::JsonSchema,
        C: serde::de::DeserializeOwned + schemars::JsonSchema + Send + Sync + 'static,
    {
        self.add_graph(name.into(), graph, options, Some(ContextSpec::of::<C>()))
    }

    fn add_graph<S: GraphState + schemars::JsonSchema>(
        mut self,
        name: String,
        graph: StateGraph<S>,
        options: CompileOptions,
        context: Option<ContextSpec>,
    ) -> Self {
        let label = name.clone();
        let compile: Compile = Box::new(move |saver, store| {
            let compiled = graph
                .compile_with(
                    options
                        .shared_checkpointer(saver.clone())
                        .shared_store(store),
                )
                .map_err(|source| ServerError::Build {
                    name: label.clone(),
                    source,
                })?;
            let mut schema = schemas_of::<S>(&label);
            if let Some(spec) = &context {
                schema.context_schema = Some(spec.schema.clone());
            }
            Ok(Arc::new(Entry {
                name: label,
                graph: compiled,
                schema,
                context,
            }) as Arc<dyn Served>)
        });
        self.graphs.push((name, compile));
        self
    }

    /// Keeps threads, runs and checkpoints in the SQLite file at `path` (created if
    /// missing). One process: its workers are the queue's only consumers.
    #[must_use]
    pub fn sqlite(mut self, path: impl Into<PathBuf>) -> Self {
        self.backend = Backend::Sqlite(path.into());
        self
    }

    /// Keeps threads, runs and checkpoints in the PostgreSQL database at `url`
    /// (`postgres://user:password@host:5432/db`, TLS as its `sslmode` says; see
    /// [`stategraph_postgres`]), tables created if missing. Any number of processes
    /// may serve the same database: each claims runs from the shared queue, a run
    /// whose process died is taken over when its [lease](Server::lease) expires, and
    /// a client streaming from one process receives the events of a run another
    /// executes (processes wake each other with `LISTEN`/`NOTIFY`).
    #[must_use]
    pub fn postgres(self, url: impl Into<String>) -> Self {
        self.postgres_with(url, PostgresOptions::new())
    }

    /// [`Server::postgres`] with connection options (a CA, a schema, the pool size,
    /// the connect timeout), used alike by the run queue, the checkpoint saver and
    /// the store.
    #[must_use]
    pub fn postgres_with(mut self, url: impl Into<String>, options: PostgresOptions) -> Self {
        self.backend = Backend::Postgres(url.into(), Box::new(options));
        self
    }

    /// How many runs this process executes at once (default 10). `0`: this process
    /// only serves HTTP and runs nothing — the runs it queues are executed by other
    /// processes serving the same PostgreSQL database (on SQLite nothing would run
    /// them).
    #[must_use]
    pub fn workers(mut self, jobs: usize) -> Self {
        self.jobs = jobs;
        self
    }

    /// Requires `key` on every route but `/ok`, in the `x-api-key` header (or
    /// `Authorization: Bearer`): missing is a 401, wrong a 403.
    #[must_use]
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    async fn open(self) -> Result<(Arc<App>, usize, String, watch::Sender<bool>), ServerError> {
        if self.graphs.is_empty() {
            return Err(ServerError::NoGraphs);
        }
        let cors = self.cors.layer()?;
        let (db, saver, store): (Arc<dyn Db>, Arc<dyn CheckpointSaver>, Arc<dyn Store>) =
            match &self.backend {
                Backend::Sqlite(path) => (
                    Arc::new(SqliteDb::open(path).map_err(ServerError::Database)?),
                    Arc::new(SqliteSaver::open(path).map_err(ServerError::Saver)?),
                    Arc::new(SqliteStore::open(path).map_err(ServerError::Store)?),
                ),
                Backend::Postgres(url, options) => {
                    // The saver first: it creates the options' schema, if any.
                    let saver = PostgresSaver::connect_with(url, (**options).clone())
                        .await
                        .map_err(ServerError::Saver)?;
                    let store = PostgresStore::connect_with(url, (**options).clone())
                        .await
                        .map_err(ServerError::Store)?;
                    let db = PgDb::connect(url, (**options).clone())
                        .await
                        .map_err(ServerError::Database)?;
                    (Arc::new(db), Arc::new(saver), Arc::new(store))
                }
            };
        let mut assistants = BTreeMap::new();
        let now = crate::db::now_ms();
        for (name, compile) in self.graphs {
            if assistants.contains_key(&name) {
                return Err(ServerError::DuplicateGraph(name));
            }
            let graph = compile(saver.clone(), store.clone())?;
            let id = uuid::Uuid::new_v5(
                &uuid::Uuid::NAMESPACE_URL,
                format!("stategraph:graph:{name}").as_bytes(),
            )
            .to_string();
            assistants.insert(
                name,
                Assistant {
                    id,
                    graph,
                    created_at: now,
                },
            );
        }
        let hub = Hub::new();
        db.listen(hub.clone())
            .await
            .map_err(ServerError::Database)?;
        let worker = self.worker_id.unwrap_or_else(|| {
            format!(
                "{}-{}",
                std::process::id(),
                &uuid::Uuid::new_v4().simple().to_string()[..8]
            )
        });
        // Runs this process's earlier life held (it reuses their worker names), or on
        // SQLite any run left running: no other process can be working on them.
        match db.requeue_own(worker.clone()).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(runs = n, "took back the runs a stopped process held"),
            Err(e) => return Err(ServerError::Database(e)),
        }
        let webhooks = crate::webhook::Sender::new(self.webhooks).map_err(ServerError::Webhooks)?;
        let (stop, stopping) = watch::channel(false);
        let app = App {
            assistants,
            db,
            hub,
            saver,
            store,
            api_key: self.api_key,
            cors,
            text_plain_origins: self.text_plain_origins,
            allowed_hosts: self.allowed_hosts,
            limits: self.limits,
            runs_per_thread: Default::default(),
            requests_per_client: Default::default(),
            stopping,
            webhooks,
            deliveries: tokio::sync::Notify::new(),
        };
        Ok((Arc::new(app), self.jobs, worker, stop))
    }

    /// Opens the database, binds `addr` and starts serving and working in the
    /// background; returns at once with the [`Running`] server.
    ///
    /// # Errors
    /// [`ServerError`]: no graphs, a graph that does not compile, a database that
    /// cannot be opened, an address that cannot be bound.
    pub async fn bind(self, addr: &str) -> Result<Running, ServerError> {
        let (app, jobs, worker, stop) = self.open().await?;
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| ServerError::Bind {
                addr: addr.to_string(),
                source,
            })?;
        let local = listener.local_addr().map_err(|source| ServerError::Bind {
            addr: addr.to_string(),
            source,
        })?;
        let stopped = app.stopping.clone();
        let workers = crate::worker::spawn(app.clone(), worker, jobs, stopped.clone());
        let guard_host = app.api_key.is_none() && local.ip().is_loopback();
        let router = crate::routes::router(app.clone(), guard_host);
        let connections = app.limits.connections;
        let http = tokio::spawn(crate::listen::serve(listener, router, connections, stopped));
        tracing::info!(%local, "serving");
        Ok(Running {
            addr: local,
            stop,
            http,
            workers,
        })
    }

    /// [`Server::bind`], then serves until Ctrl-C (or SIGTERM), then shuts down
    /// gracefully.
    ///
    /// # Errors
    /// As [`Server::bind`], and [`ServerError::Serve`] when the HTTP server fails.
    pub async fn serve(self, addr: &str) -> Result<(), ServerError> {
        self.bind(addr).await?.shutdown_on_signal().await
    }
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => {
                    let _ = tokio::signal::ctrl_c().await;
                    return;
                }
            };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// A bound server: answering requests and running queued runs until
/// [`Running::shutdown`].
pub struct Running {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    http: tokio::task::JoinHandle<std::io::Result<()>>,
    workers: Vec<tokio::task::JoinHandle<()>>,
}

impl Running {
    /// The address it listens on (with the port chosen for `:0`).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Waits for Ctrl-C or SIGTERM (what `docker stop`, systemd and Kubernetes
    /// send), then [`Running::shutdown`]s.
    ///
    /// # Errors
    /// As [`Running::shutdown`].
    pub async fn shutdown_on_signal(self) -> Result<(), ServerError> {
        shutdown_signal().await;
        tracing::info!("stopping: finishing open requests, handing back held runs");
        self.shutdown().await
    }

    /// Stops taking requests, lets open ones finish, and hands the runs its workers
    /// hold back to the queue (another process, or the next start, continues them
    /// from their last checkpoint).
    ///
    /// # Errors
    /// [`ServerError::Serve`] when the HTTP server had failed.
    pub async fn shutdown(self) -> Result<(), ServerError> {
        let _ = self.stop.send(true);
        for w in self.workers {
            let _ = w.await;
        }
        match self.http.await {
            Ok(result) => result.map_err(ServerError::Serve),
            Err(e) => Err(ServerError::Serve(std::io::Error::other(e.to_string()))),
        }
    }
}
