//! Crons: scheduled runs, stored beside the runs they start. A due firing is claimed
//! by moving the cron's `next_run_at` from the tick it fired for to the next one —
//! a compare-and-set in the transaction that inserts the run — so each tick starts
//! one run however many processes share the database.

use serde_json::{Map, Value};
use stategraph::BoxFuture;

use super::rows::{DbResult, NewRun, RunRow, contains};

/// A stored cron.
#[derive(Clone, Debug)]
pub(crate) struct CronRow {
    /// Its id.
    pub(crate) cron_id: String,
    /// The assistant its runs run.
    pub(crate) assistant_id: String,
    /// The thread its runs run on; `None`: a new thread per run.
    pub(crate) thread_id: Option<String>,
    /// The schedule, as the client gave it.
    pub(crate) schedule: String,
    /// The IANA time zone the schedule reads in (`None`: UTC).
    pub(crate) timezone: Option<String>,
    /// No firing after this (milliseconds since the Unix epoch).
    pub(crate) end_time: Option<i64>,
    /// Paused when false.
    pub(crate) enabled: bool,
    /// What a stateless cron's run does with its thread: `delete` or `keep`.
    pub(crate) on_run_completed: Option<String>,
    /// The run request each firing makes.
    pub(crate) payload: Map<String, Value>,
    /// The client's metadata (also each run's).
    pub(crate) metadata: Map<String, Value>,
    /// The tick it fires for next (milliseconds since the Unix epoch); `None` once
    /// its schedule is over.
    pub(crate) next_run_at: Option<i64>,
    /// Milliseconds since the Unix epoch.
    pub(crate) created_at: i64,
    /// Milliseconds since the Unix epoch.
    pub(crate) updated_at: i64,
}

/// What cron searches sort by (ties by cron id).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum CronOrder {
    CronId,
    AssistantId,
    ThreadId,
    #[default]
    CreatedAt,
    UpdatedAt,
    NextRunAt,
    EndTime,
}

/// Which crons a search returns.
#[derive(Clone, Debug, Default)]
pub(crate) struct CronQuery {
    /// Only this assistant's.
    pub(crate) assistant_id: Option<String>,
    /// Only this thread's.
    pub(crate) thread_id: Option<String>,
    /// Only enabled (or paused) ones.
    pub(crate) enabled: Option<bool>,
    /// Metadata every returned cron contains (key by key, values equal).
    pub(crate) metadata: Map<String, Value>,
    /// The order of the result.
    pub(crate) order: CronOrder,
    /// Smallest first (else largest first).
    pub(crate) ascending: bool,
    /// At most this many.
    pub(crate) limit: usize,
    /// Skip this many first.
    pub(crate) offset: usize,
}

impl CronQuery {
    /// Whether `row` matches the filters (not the page).
    pub(crate) fn matches(&self, row: &CronRow) -> bool {
        self.assistant_id
            .as_ref()
            .is_none_or(|a| *a == row.assistant_id)
            && self
                .thread_id
                .as_ref()
                .is_none_or(|t| row.thread_id.as_ref() == Some(t))
            && self.enabled.is_none_or(|e| e == row.enabled)
            && contains(&Value::Object(row.metadata.clone()), &self.metadata)
    }
}

/// One firing to claim: the tick the cron is due for, the one after, and the run
/// it starts (none: the tick is skipped, its run could not be made).
#[derive(Clone, Debug)]
pub(crate) struct Firing {
    /// The cron.
    pub(crate) cron_id: String,
    /// The tick it fires for: its `next_run_at` as read.
    pub(crate) due: i64,
    /// Its next tick (`None`: its schedule is over).
    pub(crate) next: Option<i64>,
    /// The run to queue.
    pub(crate) run: Option<NewRun>,
}

/// What claiming a firing did.
#[derive(Clone, Debug)]
pub(crate) enum Fired {
    /// Claimed: the run it queued, if it had one.
    Claimed(Option<Box<RunRow>>),
    /// Another process fired that tick first (or the cron changed meanwhile).
    Taken,
}

/// Crons: stored schedules and the claim of their firings.
pub(crate) trait Crons: Send + Sync + 'static {
    /// Stores a new cron.
    fn insert_cron(&self, cron: CronRow) -> BoxFuture<'_, DbResult<CronRow>>;
    /// The cron, if stored.
    fn get_cron(&self, cron_id: String) -> BoxFuture<'_, DbResult<Option<CronRow>>>;
    /// Replaces a cron's fields; its `next_run_at` only with `reschedule` (else the
    /// stored one stays, so an edit racing a firing never brings a fired tick back).
    fn update_cron(
        &self,
        cron: CronRow,
        reschedule: bool,
    ) -> BoxFuture<'_, DbResult<Option<CronRow>>>;
    /// Deletes a cron; whether it existed.
    fn delete_cron(&self, cron_id: String) -> BoxFuture<'_, DbResult<bool>>;
    /// The crons matching `query`, in its order.
    fn search_crons(&self, query: CronQuery) -> BoxFuture<'_, DbResult<Vec<CronRow>>>;
    /// How many crons match `query` (its limit and offset ignored).
    fn count_crons(&self, query: CronQuery) -> BoxFuture<'_, DbResult<u64>>;
    /// Enabled crons whose next tick is at or before `now`, most overdue first, at
    /// most `limit`.
    fn due_crons(&self, now: i64, limit: usize) -> BoxFuture<'_, DbResult<Vec<CronRow>>>;
    /// The earliest next tick of an enabled cron.
    fn next_cron_tick(&self) -> BoxFuture<'_, DbResult<Option<i64>>>;
    /// Claims a firing: moves the cron from `due` to `next` and queues its run, in
    /// one transaction, if the cron is still enabled and still due at `due`.
    fn fire_cron(&self, firing: Firing) -> BoxFuture<'_, DbResult<Fired>>;
}

/// Sorts and pages crons the way a search asks (for backends that filter in memory).
pub(crate) fn order_crons(mut rows: Vec<CronRow>, query: &CronQuery) -> Vec<CronRow> {
    rows.retain(|r| query.matches(r));
    rows.sort_by(|a, b| {
        let by = match query.order {
            CronOrder::CronId => std::cmp::Ordering::Equal,
            CronOrder::AssistantId => a.assistant_id.cmp(&b.assistant_id),
            CronOrder::ThreadId => a.thread_id.cmp(&b.thread_id),
            CronOrder::CreatedAt => a.created_at.cmp(&b.created_at),
            CronOrder::UpdatedAt => a.updated_at.cmp(&b.updated_at),
            CronOrder::NextRunAt => a.next_run_at.cmp(&b.next_run_at),
            CronOrder::EndTime => a.end_time.cmp(&b.end_time),
        }
        .then_with(|| a.cron_id.cmp(&b.cron_id));
        if query.ascending { by } else { by.reverse() }
    });
    rows.into_iter()
        .skip(query.offset)
        .take(query.limit)
        .collect()
}
