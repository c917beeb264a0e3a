//! What every request handler and worker shares: the graphs, the tables, the
//! saver and store, the wake-ups and the limits.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use stategraph::checkpoint::CheckpointSaver;
use stategraph::store::Store;

use crate::db::Db;
use crate::error::ApiError;
use crate::hub::{Hub, Notice};
use crate::served::Served;

/// A graph as an assistant: LangGraph Platform's name for a configured graph. Each
/// graph is one assistant, whose id is a UUID derived from the graph's name (the
/// same on every process and restart); either names it in requests.
pub(crate) struct Assistant {
    pub(crate) id: String,
    pub(crate) graph: Arc<dyn Served>,
    pub(crate) created_at: i64,
}

impl Assistant {
    /// The `Assistant` JSON.
    pub(crate) fn wire(&self) -> crate::wire::Assistant {
        let at = crate::wire::time(self.created_at);
        crate::wire::Assistant {
            assistant_id: self.id.clone(),
            graph_id: self.graph.name().to_string(),
            name: self.graph.name().to_string(),
            description: None,
            config: Map::new(),
            context: Map::new(),
            metadata: Map::from_iter([("created_by".into(), Value::from("system"))]),
            version: 1,
            created_at: at.clone(),
            updated_at: at,
        }
    }
}

/// An assistant a request names, found: a system one (a served graph) or a stored
/// one, with the graph it runs and the configuration and context its runs start
/// from.
pub(crate) struct Found {
    pub(crate) id: String,
    pub(crate) graph: Arc<dyn Served>,
    pub(crate) config: Map<String, Value>,
    pub(crate) context: Map<String, Value>,
    pub(crate) wire: crate::wire::Assistant,
    /// Made from code at start-up (not changeable through the API).
    pub(crate) system: bool,
}

/// The limits a server enforces.
#[derive(Clone, Debug)]
pub(crate) struct Limits {
    /// Largest request body, in bytes.
    pub(crate) body_bytes: usize,
    /// Most runs created per thread per minute.
    pub(crate) runs_per_thread_per_minute: u32,
    /// How long a worker's claim on a run lasts without a heartbeat.
    pub(crate) lease: Duration,
    /// How long a finished run's events are kept for re-attaching clients.
    pub(crate) event_retention: Duration,
    /// How long a request body may go without a byte arriving.
    pub(crate) body_read: Duration,
    /// Connections: how many at once, how long for a request's headers.
    pub(crate) connections: crate::listen::ConnLimits,
    /// Most requests one client (API key, else address) may send per minute.
    pub(crate) requests_per_client_per_minute: Option<u32>,
    /// A run's input naming a key its graph's state lacks is a 422 (else the key
    /// is dropped, and named in the run's metadata).
    pub(crate) strict_input: bool,
    /// The time to live of threads without their own.
    pub(crate) thread_ttl: Option<crate::db::Ttl>,
}

/// The shared state.
pub(crate) struct App {
    pub(crate) assistants: BTreeMap<String, Assistant>,
    pub(crate) db: Arc<dyn Db>,
    pub(crate) hub: Hub,
    pub(crate) saver: Arc<dyn CheckpointSaver>,
    pub(crate) store: Arc<dyn Store>,
    pub(crate) api_key: Option<String>,
    /// The CORS layer around every route, unless CORS is off.
    pub(crate) cors: Option<tower_http::cors::CorsLayer>,
    /// Origins whose `text/plain` bodies are read as JSON (LangGraph Studio's way).
    pub(crate) text_plain_origins: Vec<String>,
    /// Names besides this machine's that `Host` may give (see `local_host_only`).
    pub(crate) allowed_hosts: Vec<String>,
    pub(crate) limits: Limits,
    /// Run creations per thread in the current minute.
    pub(crate) runs_per_thread: crate::rate::Windows,
    /// Requests per client in the current minute (when limited).
    pub(crate) requests_per_client: crate::rate::Windows,
    /// Turns true when the server shuts down: open streams and waits end then.
    pub(crate) stopping: tokio::sync::watch::Receiver<bool>,
    /// The client webhook calls go through, and its configuration.
    pub(crate) webhooks: crate::webhook::Sender,
    /// Wakes this process's deliverer when one of its runs queued a call.
    pub(crate) deliveries: tokio::sync::Notify,
}

impl App {
    /// The assistant named by its id or its graph's name.
    pub(crate) fn assistant(&self, id: &str) -> Result<&Assistant, ApiError> {
        self.assistants
            .get(id)
            .or_else(|| self.assistants.values().find(|a| a.id == id))
            .ok_or_else(|| {
                let known: Vec<&str> = self.assistants.keys().map(String::as_str).collect();
                ApiError::not_found(format!(
                    "assistant {id} (serving graphs: {})",
                    known.join(", ")
                ))
            })
    }

    /// The assistant named by `id`: a served graph (by its name or assistant id), or
    /// one made through the API; a 404 otherwise.
    pub(crate) async fn find_assistant(&self, id: &str) -> Result<Found, ApiError> {
        if let Ok(a) = self.assistant(id) {
            return Ok(Found {
                id: a.id.clone(),
                graph: a.graph.clone(),
                config: Map::new(),
                context: Map::new(),
                wire: a.wire(),
                system: true,
            });
        }
        let Some(row) = self.db.get_assistant(id.to_string()).await? else {
            return Err(self
                .assistant(id)
                .err()
                .unwrap_or_else(|| ApiError::not_found(format!("assistant {id}"))));
        };
        let graph = self.graph_named(&row.graph_id)?;
        Ok(Found {
            id: row.assistant_id.clone(),
            graph,
            wire: crate::wire::Assistant::from(&row),
            config: row.config,
            context: row.context,
            system: false,
        })
    }

    /// The served graph named `graph_id`; a 404 naming the served ones otherwise.
    pub(crate) fn graph_named(&self, graph_id: &str) -> Result<Arc<dyn Served>, ApiError> {
        self.assistants
            .get(graph_id)
            .map(|a| a.graph.clone())
            .ok_or_else(|| {
                let known: Vec<&str> = self.assistants.keys().map(String::as_str).collect();
                ApiError::not_found(format!(
                    "graph {graph_id} (serving graphs: {})",
                    known.join(", ")
                ))
            })
    }

    /// Tells this process and, on PostgreSQL, the others.
    pub(crate) async fn notify(&self, notice: Notice) {
        if let Err(e) = self.db.publish(&notice).await {
            tracing::warn!(error = %e, "could not notify other processes");
        }
        self.hub.local(notice);
    }

    /// Counts a run creation on `thread_id`; a 429 past the per-minute limit.
    pub(crate) fn admit_run(&self, thread_id: &str) -> Result<(), ApiError> {
        let limit = self.limits.runs_per_thread_per_minute;
        self.runs_per_thread.admit(thread_id, limit).map_err(|wait| {
            ApiError::too_many(
                format!(
                    "thread {thread_id} had {limit} runs created in the last minute, the limit: try again later"
                ),
                wait,
            )
        })
    }
}
