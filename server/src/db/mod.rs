//! The server's own tables — threads, runs (the run queue), run events, crons, the
//! webhook outbox and assistants — behind one object-safe trait with a SQLite and a PostgreSQL
//! implementation.
//!
//! Checkpoints are not here: they live in the graph's checkpoint saver, on the same
//! database. These tables hold what the API adds around them: thread metadata and
//! status, each run's request and lifecycle, its lease, and the events it streamed
//! (kept so a client can re-attach to a run and replay from `Last-Event-ID`).

mod assistants;
mod crons;
mod outbox;
pub(crate) mod postgres;
mod retention;
mod rows;
pub(crate) mod sqlite;

pub(crate) use assistants::{AssistantChange, AssistantRow, Assistants};
pub(crate) use crons::{CronOrder, CronQuery, CronRow, Crons, Fired, Firing, order_crons};
pub(crate) use outbox::{DeliveryRow, Outbox};
pub(crate) use retention::{Expired, Retention, Ttl, keeps_latest};
pub use rows::DbError;
pub(crate) use rows::{
    BeforeQueue, Claim, DbResult, EventRow, Finish, Lease, NewDelivery, NewRun, RunRow, RunStatus,
    ThreadOrder, ThreadQuery, ThreadRow, ThreadStatus, busy, contains, now_ms, parse_json,
    parse_object, thread_events_key,
};

use std::time::Duration;

use serde_json::{Map, Value};
use stategraph::BoxFuture;

use crate::hub::{Hub, Notice};

/// Threads: their metadata, status and last values.
pub(crate) trait Threads: Send + Sync + 'static {
    /// Creates a thread; with `if_exists_do_nothing`, an existing one is returned
    /// instead of a conflict.
    fn create_thread(
        &self,
        thread_id: String,
        metadata: Map<String, Value>,
        if_exists_do_nothing: bool,
    ) -> BoxFuture<'_, DbResult<ThreadRow>>;
    /// The thread, if stored.
    fn get_thread(&self, thread_id: String) -> BoxFuture<'_, DbResult<Option<ThreadRow>>>;
    /// Merges `metadata` into the thread's.
    fn patch_thread(
        &self,
        thread_id: String,
        metadata: Map<String, Value>,
    ) -> BoxFuture<'_, DbResult<Option<ThreadRow>>>;
    /// Stores the thread's values and interrupts (after `update_state`).
    fn set_thread_values(
        &self,
        thread_id: String,
        values: Value,
        interrupts: Value,
        status: ThreadStatus,
    ) -> BoxFuture<'_, DbResult<()>>;
    /// Deletes the thread with its runs and their events; whether it existed.
    fn delete_thread(&self, thread_id: String) -> BoxFuture<'_, DbResult<bool>>;
    /// Threads matching `query`, most recently updated first.
    fn search_threads(&self, query: ThreadQuery) -> BoxFuture<'_, DbResult<Vec<ThreadRow>>>;
    /// How many threads match `query` (its limit and offset ignored).
    fn count_threads(&self, query: ThreadQuery) -> BoxFuture<'_, DbResult<u64>>;
}

/// Runs: the queue workers claim from, and the events runs stream.
pub(crate) trait Queue: Send + Sync + 'static {
    /// Queues a run, applying its multitask strategy to its thread's active runs
    /// (`reject`: a conflict; `interrupt`/`rollback`: the active ones are asked to
    /// stop, pending ones end at once; `enqueue`: it waits its turn). Returns the
    /// stored run.
    fn insert_run(&self, run: NewRun) -> BoxFuture<'_, DbResult<RunRow>>;
    /// The run, if stored (and of that thread, when one is given).
    fn get_run(
        &self,
        thread_id: Option<String>,
        run_id: String,
    ) -> BoxFuture<'_, DbResult<Option<RunRow>>>;
    /// The thread's runs, newest first.
    fn list_runs(
        &self,
        thread_id: String,
        status: Option<RunStatus>,
        limit: usize,
        offset: usize,
    ) -> BoxFuture<'_, DbResult<Vec<RunRow>>>;
    /// Asks a run to stop (`interrupt` or `rollback`). A pending run ends at once; a
    /// running one when its worker sees it. Returns the run as it is now.
    fn cancel_run(
        &self,
        thread_id: String,
        run_id: String,
        action: String,
    ) -> BoxFuture<'_, DbResult<Option<RunRow>>>;
    /// Deletes a finished run; `Conflict` for an active one.
    fn delete_run(&self, thread_id: String, run_id: String) -> BoxFuture<'_, DbResult<bool>>;

    /// Claims the oldest runnable run — pending, or running with an expired lease —
    /// whose thread has no other live run and no older pending run; marks it running
    /// under `worker` until now + `lease`.
    fn claim_run(&self, worker: String, lease: Duration)
    -> BoxFuture<'_, DbResult<Option<RunRow>>>;
    /// Extends the lease of a run while `claim` still holds it.
    fn renew_lease(&self, claim: Claim, lease: Duration) -> BoxFuture<'_, DbResult<Lease>>;
    /// Hands a run back to the queue (graceful shutdown): pending again, no lease.
    fn release_run(&self, claim: Claim) -> BoxFuture<'_, DbResult<()>>;
    /// Ends a run `claim` still holds and sets its thread's status and values;
    /// `false` when it no longer holds it.
    fn finish_run(&self, claim: Claim, finish: Finish) -> BoxFuture<'_, DbResult<bool>>;
    /// At start-up: hands back at once the runs that workers named `{prefix}/…` held
    /// when their process died (this process reuses their names), and, where no other
    /// process can share the database (SQLite), every run left running. Returns how
    /// many.
    fn requeue_own(&self, prefix: String) -> BoxFuture<'_, DbResult<u64>>;

    /// Appends events to a run's stream; returns the last sequence number.
    fn append_events(
        &self,
        run_id: String,
        events: Vec<(String, Value)>,
    ) -> BoxFuture<'_, DbResult<i64>>;
    /// The run's events after sequence number `after`, in order, at most `limit`.
    fn events_after(
        &self,
        run_id: String,
        after: i64,
        limit: usize,
    ) -> BoxFuture<'_, DbResult<Vec<EventRow>>>;
    /// The sequence number of the stream's last event (0 when it has none).
    fn last_event_seq(&self, run_id: String) -> BoxFuture<'_, DbResult<i64>>;
    /// Deletes the events of runs that ended more than `age` ago; how many.
    fn sweep_events(&self, age: Duration) -> BoxFuture<'_, DbResult<u64>>;
}

/// Storage for threads, runs and run events, and the wake-ups between processes.
pub(crate) trait Db: Threads + Queue + Crons + Outbox + Assistants + Retention {
    /// Tells the other processes on this database (`NOTIFY`); a no-op where there
    /// are none (SQLite: one process).
    fn publish(&self, notice: &Notice) -> BoxFuture<'_, DbResult<()>> {
        let _ = notice;
        Box::pin(async { Ok(()) })
    }

    /// Starts forwarding the other processes' notices to `hub` (`LISTEN`); a no-op
    /// where there are none.
    fn listen(&self, hub: Hub) -> BoxFuture<'_, DbResult<()>> {
        let _ = hub;
        Box::pin(async { Ok(()) })
    }
}
