//! What the tables hold and hand over — rows, queries, a run's claim and end — and
//! the small decisions and codecs both backends share.

use std::time::Duration;

use serde_json::{Map, Value};

/// A storage failure, or a request the tables refuse.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DbError {
    /// SQLite failed.
    #[error("SQLite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// PostgreSQL failed.
    #[error("PostgreSQL: {0}")]
    Postgres(#[from] tokio_postgres::Error),
    /// The PostgreSQL pool or its connection failed.
    #[error("PostgreSQL connection: {0}")]
    Connect(String),
    /// A stored JSON column does not decode (a table written by something else).
    #[error("a stored {what} is not valid JSON: {source}")]
    Corrupt {
        /// Which column.
        what: &'static str,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// A blocking task was lost (the runtime is shutting down).
    #[error("the database task did not finish: {0}")]
    Task(String),
    /// The request conflicts with what is stored (a busy thread, an existing id).
    #[error("{0}")]
    Conflict(String),
}

/// A storage result.
pub type DbResult<T> = Result<T, DbError>;

/// A thread's status, as the API reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThreadStatus {
    /// No run is active and the last one finished.
    Idle,
    /// A run is pending or running.
    Busy,
    /// The last run paused at an interrupt.
    Interrupted,
    /// The last run failed.
    Error,
}

impl ThreadStatus {
    /// The API's name.
    pub fn as_str(self) -> &'static str {
        match self {
            ThreadStatus::Idle => "idle",
            ThreadStatus::Busy => "busy",
            ThreadStatus::Interrupted => "interrupted",
            ThreadStatus::Error => "error",
        }
    }

    /// The status named `s`.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "idle" => ThreadStatus::Idle,
            "busy" => ThreadStatus::Busy,
            "interrupted" => ThreadStatus::Interrupted,
            "error" => ThreadStatus::Error,
            _ => return None,
        })
    }
}

/// A run's status, as the API reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunStatus {
    /// Queued.
    Pending,
    /// Claimed by a worker.
    Running,
    /// Finished (possibly paused at an interrupt: the thread says so).
    Success,
    /// Failed.
    Error,
    /// Cancelled (by a client or a double-text).
    Interrupted,
    /// Took longer than allowed.
    Timeout,
}

impl RunStatus {
    /// The API's name.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Pending => "pending",
            RunStatus::Running => "running",
            RunStatus::Success => "success",
            RunStatus::Error => "error",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Timeout => "timeout",
        }
    }

    /// The status named `s`.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "pending" => RunStatus::Pending,
            "running" => RunStatus::Running,
            "success" => RunStatus::Success,
            "error" => RunStatus::Error,
            "interrupted" => RunStatus::Interrupted,
            "timeout" => RunStatus::Timeout,
            _ => return None,
        })
    }

    /// Whether the run will not change any more.
    pub fn is_final(self) -> bool {
        !matches!(self, RunStatus::Pending | RunStatus::Running)
    }
}

/// A stored thread.
#[derive(Clone, Debug)]
pub struct ThreadRow {
    /// Its id.
    pub thread_id: String,
    /// Milliseconds since the Unix epoch.
    pub created_at: i64,
    /// Milliseconds since the Unix epoch.
    pub updated_at: i64,
    /// The client's metadata (plus `graph_id` and `assistant_id` once a run used it).
    pub metadata: Map<String, Value>,
    /// Its status.
    pub status: ThreadStatus,
    /// The state values after its last run or update (`{}` before any).
    pub values: Value,
    /// The interrupts it waits on, by interrupt id.
    pub interrupts: Value,
}

/// A stored run.
#[derive(Clone, Debug)]
pub struct RunRow {
    /// Its id.
    pub run_id: String,
    /// Its thread.
    pub thread_id: String,
    /// The assistant (graph) it runs.
    pub assistant_id: String,
    /// Milliseconds since the Unix epoch.
    pub created_at: i64,
    /// Milliseconds since the Unix epoch.
    pub updated_at: i64,
    /// Its status.
    pub status: RunStatus,
    /// The client's metadata.
    pub metadata: Map<String, Value>,
    /// How it treats other runs of its thread.
    pub multitask_strategy: String,
    /// The request (input, command, stream modes, config, …).
    pub kwargs: Value,
    /// How many times a worker claimed it.
    pub attempt: i32,
    /// Set when a client asked to stop it: `interrupt` or `rollback`.
    pub cancel: Option<String>,
    /// What the run ended with (values, or the error), once it ended.
    pub output: Option<Value>,
}

/// A run to insert, with how to treat its thread's active runs.
#[derive(Clone, Debug)]
pub struct NewRun {
    /// The run.
    pub row: RunRow,
    /// Create the thread when it does not exist (`if_not_exists = "create"`).
    pub create_thread: bool,
    /// The run's graph as thread metadata (`graph_id`, `assistant_id`): a created
    /// thread starts with it, and an existing thread that names no graph yet gets it
    /// in the run's transaction.
    pub thread_metadata: Map<String, Value>,
    /// Not claimed before this long after it is queued (`after_seconds`).
    pub delay: Option<Duration>,
}

/// Which threads a search returns.
#[derive(Clone, Debug, Default)]
pub struct ThreadQuery {
    /// Metadata every returned thread contains (key by key, values equal).
    pub metadata: Map<String, Value>,
    /// Values the returned threads' state contains (top-level keys, equal).
    pub values: Map<String, Value>,
    /// Only threads with this status.
    pub status: Option<ThreadStatus>,
    /// Only these threads, when given.
    pub ids: Option<Vec<String>>,
    /// The order of the result.
    pub order: ThreadOrder,
    /// Smallest first (else largest first).
    pub ascending: bool,
    /// At most this many.
    pub limit: usize,
    /// Skip this many first.
    pub offset: usize,
}

/// What thread searches sort by (ties by thread id, in the same direction).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ThreadOrder {
    /// The thread id.
    ThreadId,
    /// The status' name.
    Status,
    /// When the thread was created.
    CreatedAt,
    /// When it last changed (the default).
    #[default]
    UpdatedAt,
}

impl ThreadOrder {
    /// The column it sorts by.
    pub(crate) fn column(self) -> &'static str {
        match self {
            Self::ThreadId => "thread_id",
            Self::Status => "status",
            Self::CreatedAt => "created_at",
            Self::UpdatedAt => "updated_at",
        }
    }
}

/// One event a run streamed.
#[derive(Clone, Debug)]
pub struct EventRow {
    /// Its position in the run's stream, from 1.
    pub seq: i64,
    /// The SSE event name (`values`, `updates|node:…`, `end`, …).
    pub event: String,
    /// The JSON it carries.
    pub data: Value,
}

/// A worker's hold on a run: the fencing token every lease renewal, hand-back and
/// finish carries. Each claim of a run numbers a new attempt, so a worker that stalled
/// past its lease (and whose run another worker claimed since) is refused in the
/// same statement, even under the same worker id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Claim {
    /// The run.
    pub(crate) run_id: String,
    /// The worker holding it.
    pub(crate) worker: String,
    /// Which claim of the run this is (from 1).
    pub(crate) attempt: i32,
}

impl Claim {
    /// The claim `worker` made when it was handed `run`.
    pub(crate) fn of(run: &RunRow, worker: &str) -> Self {
        Self {
            run_id: run.run_id.clone(),
            worker: worker.to_string(),
            attempt: run.attempt,
        }
    }
}

/// What a run's worker learns when it renews its lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lease {
    /// Still the run's worker.
    Held {
        /// A client asked to stop the run (`interrupt` or `rollback`).
        cancel: Option<String>,
    },
    /// Another worker took the run (this one was too slow), or it was deleted.
    Lost,
}

/// How a worker ends a run.
#[derive(Clone, Debug)]
pub struct Finish {
    /// The run's final status.
    pub status: RunStatus,
    /// The thread's status, unless another run of it is active (then busy).
    pub thread_status: ThreadStatus,
    /// The thread's values to store, when known.
    pub values: Option<Value>,
    /// The thread's pending interrupts.
    pub interrupts: Value,
    /// What the run ended with.
    pub output: Value,
    /// Delete the run's row instead (a rollback).
    pub delete_run: bool,
    /// A webhook to call about the run's end: queued in the same transaction.
    pub webhook: Option<NewDelivery>,
}

/// A webhook call to queue: where, and the JSON to POST.
#[derive(Clone, Debug)]
pub struct NewDelivery {
    /// The URL the run was created with.
    pub url: String,
    /// The run's end, as the webhook's body.
    pub body: Value,
}

/// The key a thread's own events (its state updates) are stored under beside its
/// runs' events: run ids are UUIDs, so it never names a run.
pub(crate) fn thread_events_key(thread_id: &str) -> String {
    format!("thread:{thread_id}")
}

/// What queueing a run does first to its thread's active runs, by its multitask
/// strategy: the one decision both backends carry out in their own transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BeforeQueue {
    /// `enqueue`: nothing; the run waits its turn.
    Nothing,
    /// `reject`: a conflict ([`busy`]) when the thread has an active run.
    RejectIfBusy,
    /// `interrupt` or `rollback`: the active runs are asked to stop that way.
    StopActive(&'static str),
}

impl BeforeQueue {
    /// The decision for a stored strategy name.
    pub(crate) fn of(strategy: &str) -> Self {
        match strategy {
            "reject" => BeforeQueue::RejectIfBusy,
            "interrupt" => BeforeQueue::StopActive("interrupt"),
            "rollback" => BeforeQueue::StopActive("rollback"),
            _ => BeforeQueue::Nothing,
        }
    }
}

/// The conflict of a `reject` run on a busy thread.
pub(crate) fn busy(thread_id: &str) -> DbError {
    DbError::Conflict(format!(
        "thread {thread_id} is busy with another run: wait for it, or send \
         `multitask_strategy` enqueue, interrupt or rollback"
    ))
}

/// Milliseconds since the Unix epoch, now.
pub(crate) fn now_ms() -> i64 {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// A stored JSON column.
pub(crate) fn parse_json(text: &str, what: &'static str) -> DbResult<Value> {
    serde_json::from_str(text).map_err(|source| DbError::Corrupt { what, source })
}

/// A stored JSON object column.
pub(crate) fn parse_object(text: &str, what: &'static str) -> DbResult<Map<String, Value>> {
    match parse_json(text, what)? {
        Value::Object(map) => Ok(map),
        _ => Ok(Map::new()),
    }
}

/// Whether `have` contains every key of `want` with an equal value.
pub(crate) fn contains(have: &Value, want: &Map<String, Value>) -> bool {
    want.iter().all(|(k, v)| have.get(k) == Some(v))
}
