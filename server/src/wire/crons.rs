//! Crons as clients send and read them: `POST /runs/crons` and
//! `/threads/{id}/runs/crons` ([`CronCreate`]), `PATCH /runs/crons/{id}`
//! ([`CronPatch`]), searches ([`CronSearch`]) and the [`Cron`] answer.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::clock::time;
use super::order::SortOrder;
use super::runs::OnCompletion;

/// A cron to create: its schedule, and the run each firing makes — every field of
/// a run request (`assistant_id`, `input`, `config`, `metadata`, …), checked as a
/// run request is.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub(crate) struct CronCreate {
    /// A cron expression: five fields (minute hour day-of-month month day-of-week),
    /// or six with the seconds last, as LangGraph Platform reads them.
    #[serde(default)]
    pub(crate) schedule: String,
    /// The IANA time zone the schedule reads in (UTC when absent).
    #[serde(default)]
    pub(crate) timezone: Option<String>,
    /// No firing after this time (RFC 3339; a time without an offset is UTC).
    #[serde(default)]
    pub(crate) end_time: Option<String>,
    /// Paused when false.
    #[serde(default)]
    pub(crate) enabled: Option<bool>,
    /// A stateless cron's thread after each run: `delete` (the default) or `keep`.
    #[serde(default)]
    pub(crate) on_run_completed: Option<OnCompletion>,
    /// The run request each firing makes.
    #[serde(flatten)]
    #[schema(value_type = Object)]
    pub(crate) run: Map<String, Value>,
}

/// Changes to a cron: each field given replaces the stored one; run fields
/// (`input`, `config`, `metadata`, …) replace those of the run it makes.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub(crate) struct CronPatch {
    #[serde(default)]
    pub(crate) schedule: Option<String>,
    #[serde(default)]
    pub(crate) timezone: Option<String>,
    /// A time sets it; `null` clears it; absent leaves it.
    #[serde(default, deserialize_with = "given")]
    #[schema(value_type = Option<String>)]
    pub(crate) end_time: Option<Option<String>>,
    #[serde(default)]
    pub(crate) enabled: Option<bool>,
    #[serde(default)]
    pub(crate) on_run_completed: Option<OnCompletion>,
    /// Run fields to replace.
    #[serde(flatten)]
    #[schema(value_type = Object)]
    pub(crate) run: Map<String, Value>,
}

/// A field that is present: `Some(None)` for an explicit `null`.
fn given<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

/// `POST /runs/crons/search` and `/runs/crons/count`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CronSearch {
    /// The assistant's id or its graph's name.
    #[serde(default)]
    pub(crate) assistant_id: Option<String>,
    #[serde(default)]
    pub(crate) thread_id: Option<String>,
    #[serde(default)]
    pub(crate) enabled: Option<bool>,
    /// Metadata every returned cron contains (key by key, values equal).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub(crate) metadata: Option<Map<String, Value>>,
    #[serde(default)]
    pub(crate) sort_by: Option<CronSortBy>,
    #[serde(default)]
    pub(crate) sort_order: Option<SortOrder>,
    /// The fields of each cron to return (all when absent).
    #[serde(default)]
    pub(crate) select: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) limit: Option<usize>,
    #[serde(default)]
    pub(crate) offset: Option<usize>,
}

/// `sort_by` of a cron search.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum CronSortBy {
    CronId,
    AssistantId,
    ThreadId,
    CreatedAt,
    UpdatedAt,
    NextRunDate,
    EndTime,
}

/// The fields of a `Cron`, for `select`.
pub(crate) const CRON_FIELDS: &[&str] = &[
    "cron_id",
    "assistant_id",
    "thread_id",
    "end_time",
    "schedule",
    "timezone",
    "created_at",
    "updated_at",
    "user_id",
    "payload",
    "next_run_date",
    "metadata",
    "on_run_completed",
    "enabled",
];

/// A cron, as the API answers it.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub(crate) struct Cron {
    pub(crate) cron_id: String,
    pub(crate) assistant_id: String,
    /// Its runs' thread; `null` for a stateless cron (a new thread per run).
    pub(crate) thread_id: Option<String>,
    /// A stateless cron's thread after each run: `delete` or `keep`.
    pub(crate) on_run_completed: Option<String>,
    pub(crate) end_time: Option<String>,
    pub(crate) schedule: String,
    pub(crate) timezone: Option<String>,
    pub(crate) created_at: String,
    pub(crate) updated_at: String,
    /// The run request each firing makes.
    #[schema(value_type = Object)]
    pub(crate) payload: Map<String, Value>,
    pub(crate) user_id: Option<String>,
    /// When it fires next; `null` once its schedule is over.
    pub(crate) next_run_date: Option<String>,
    #[schema(value_type = Object)]
    pub(crate) metadata: Map<String, Value>,
    pub(crate) enabled: bool,
}

impl From<&crate::db::CronRow> for Cron {
    fn from(c: &crate::db::CronRow) -> Self {
        Self {
            cron_id: c.cron_id.clone(),
            assistant_id: c.assistant_id.clone(),
            thread_id: c.thread_id.clone(),
            on_run_completed: c.on_run_completed.clone(),
            end_time: c.end_time.map(time),
            schedule: c.schedule.clone(),
            timezone: c.timezone.clone(),
            created_at: time(c.created_at),
            updated_at: time(c.updated_at),
            payload: c.payload.clone(),
            user_id: None,
            next_run_date: c.next_run_at.map(time),
            metadata: c.metadata.clone(),
            enabled: c.enabled,
        }
    }
}
