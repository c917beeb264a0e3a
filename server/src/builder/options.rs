//! [`Server`]'s options beyond the graphs and the database: limits, timeouts,
//! browsers, webhooks, retention, the worker's name.

use std::time::Duration;

use super::Server;
use crate::cors::Cors;

impl Server {
    /// The largest request body accepted (default 2 MiB); larger is a 413.
    #[must_use]
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.limits.body_bytes = bytes;
        self
    }

    /// How long a client may take to send a request's headers, and how long a
    /// connection may stay idle between requests (default 30 s); then the connection
    /// is closed. A client that opens connections and sends half a request holds
    /// them this long at most.
    #[must_use]
    pub fn header_timeout(mut self, timeout: Duration) -> Self {
        self.limits.connections.header_read = timeout.max(Duration::from_millis(100));
        self
    }

    /// How long a request body may go without a byte arriving (default 30 s); then
    /// the request is answered 408.
    #[must_use]
    pub fn body_timeout(mut self, timeout: Duration) -> Self {
        self.limits.body_read = timeout.max(Duration::from_millis(100));
        self
    }

    /// Most connections open at once (default: half the process's limit on open
    /// files, at most 4096). At the cap the server stops accepting until one closes;
    /// later clients wait in the kernel's listen queue, and the process never runs
    /// out of file descriptors for its database. Streaming clients hold a
    /// connection each: raise the file limit (`ulimit -n`) to serve more of them.
    #[must_use]
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.limits.connections.max_connections = connections.max(1);
        self
    }

    /// How many requests one client may send per minute, per process (default: no
    /// limit); more are answered 429 with `Retry-After`. A client is the IP address
    /// its connections come from (behind a proxy, limit at the proxy instead). `/ok`
    /// is never limited.
    #[must_use]
    pub fn requests_per_client_per_minute(mut self, limit: u32) -> Self {
        self.limits.requests_per_client_per_minute = Some(limit.max(1));
        self
    }

    /// Refuses a run whose input names a key the graph's state lacks, with a 422
    /// naming it. By default such keys are dropped, as LangGraph does — real
    /// clients rely on it: CopilotKit's AG-UI adapter always sends `tools`, and
    /// `RemoteGraph` sends its parent graph's whole state — but never silently: the
    /// run's metadata lists them under `dropped_input_keys` and a warning is logged.
    /// A known key with a value of the wrong type is a 422 either way, and so is an
    /// unknown key in a state update or a command's `update`.
    #[must_use]
    pub fn strict_input(mut self) -> Self {
        self.limits.strict_input = true;
        self
    }

    /// How many runs a thread may get per minute, per process (default 600); more is
    /// a 429.
    #[must_use]
    pub fn runs_per_thread_per_minute(mut self, runs: u32) -> Self {
        self.limits.runs_per_thread_per_minute = runs;
        self
    }

    /// How long a worker's claim on a run lasts without renewal (default 30 s; it
    /// renews every third of it). A dead worker's runs are taken over after it.
    #[must_use]
    pub fn lease(mut self, lease: Duration) -> Self {
        self.limits.lease = lease.max(Duration::from_millis(300));
        self
    }

    /// How long a finished run's events stay for clients re-attaching to its stream
    /// (default one hour).
    #[must_use]
    pub fn event_retention(mut self, age: Duration) -> Self {
        self.limits.event_retention = age;
        self
    }

    /// Which web pages may call the server from a browser (default:
    /// [`Cors::local`], pages of this machine on any port). Preflight requests are
    /// answered on every route, before the API key is checked.
    #[must_use]
    pub fn cors(mut self, cors: Cors) -> Self {
        self.cors = cors;
        self
    }

    /// Accepts JSON request bodies sent as `text/plain` from pages of these
    /// origins. LangGraph Studio sends its JSON that way (a `text/plain` request
    /// needs no preflight); every other request body must be
    /// `application/json` (or `…+json`), else it is a 415. The default is none:
    /// a page of any site can send a `text/plain` POST without asking, so accepting
    /// it from anyone would let any page a user opens start runs on a server
    /// without a key.
    #[must_use]
    pub fn text_plain_json_from<I, O>(mut self, origins: I) -> Self
    where
        I: IntoIterator<Item = O>,
        O: Into<String>,
    {
        self.text_plain_origins = origins
            .into_iter()
            .map(|o| o.into().trim_end_matches('/').to_string())
            .collect();
        self
    }

    /// More names the `Host` header may give on a server without an API key that
    /// listens on loopback (a reverse proxy's public name, say). Such a server
    /// answers only requests naming this machine — `localhost`, `127.0.0.1`,
    /// `[::1]` — else a 403: a page whose site name was re-pointed at 127.0.0.1 (DNS
    /// rebinding) calls the server as its own origin, and only its `Host` gives it
    /// away. A server with an API key, or listening on another address, checks no
    /// `Host`.
    #[must_use]
    pub fn allow_hosts<I, H>(mut self, hosts: I) -> Self
    where
        I: IntoIterator<Item = H>,
        H: Into<String>,
    {
        self.allowed_hosts = hosts
            .into_iter()
            .map(|h| h.into().to_ascii_lowercase())
            .collect();
        self
    }

    /// Where a run's `webhook` may point, how calls are signed and how long and how
    /// often they are tried (default [`Webhooks::new`](crate::Webhooks::new): public
    /// hosts only, unsigned).
    #[must_use]
    pub fn webhooks(mut self, webhooks: crate::Webhooks) -> Self {
        self.webhooks = webhooks;
        self
    }

    /// This process's name in leases and logs (default: random).
    #[must_use]
    pub fn worker_id(mut self, id: impl Into<String>) -> Self {
        self.worker_id = Some(id.into());
        self
    }

    /// Threads without their own `ttl` are deleted, or kept with their latest
    /// checkpoint, this long after their last change (default: kept for ever). Every
    /// process with workers sweeps them, in bounded batches.
    #[must_use]
    pub fn thread_ttl(mut self, ttl: crate::ThreadTtl) -> Self {
        self.limits.thread_ttl = Some(ttl.stored());
        self
    }
}
