//! Crons: checking one when it is created or changed, and the scheduler that fires
//! them. Every process with workers schedules; each firing is claimed in the
//! transaction that queues its run ([`crate::db::Crons::fire_cron`]), so a tick
//! starts one run however many processes see it due. A tick missed while no process
//! was up is not made up for tick by tick: the next firing runs once and counts the
//! ticks it stands for in its run's metadata (`cron_missed`).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::watch;

use super::prepare::prepare_run;
use super::run::{announce_queued, delete_after};
use super::schedule::Schedule;
use crate::app::App;
use crate::db::{CronRow, DbError, Fired, Firing, NewRun, now_ms};
use crate::error::ApiError;
use crate::wire::{CronCreate, CronPatch, OnCompletion, RunCreate};

/// The longest the scheduler sleeps: how soon it sees a cron another process made.
const POLL: Duration = Duration::from_secs(1);
/// The shortest it sleeps after a pass that fired nothing (a due cron it cannot
/// claim, or a failing database, must not make it spin).
const BACKOFF: Duration = Duration::from_millis(25);
/// Most crons fired in one pass.
const BATCH: usize = 100;

/// A time from a request: RFC 3339, or without an offset (read as UTC).
fn parse_time(text: &str, field: &str) -> Result<i64, ApiError> {
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(text) {
        return Ok(t.timestamp_millis());
    }
    chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f")
        .map(|t| t.and_utc().timestamp_millis())
        .map_err(|_| {
            ApiError::invalid(
                field,
                format!("`{text}` is not a time: give RFC 3339, such as 2030-01-01T09:00:00Z"),
            )
        })
}

/// The schedule's first tick after now, unless past `end_time`.
fn first_tick(schedule: &Schedule, end_time: Option<i64>) -> Option<i64> {
    schedule
        .next_after(now_ms())
        .filter(|t| end_time.is_none_or(|end| *t <= end))
}

/// Checks the run a cron's payload makes, as a run request is checked.
async fn check_payload(
    app: &App,
    thread_id: Option<&String>,
    payload: &Map<String, Value>,
) -> Result<String, ApiError> {
    let req = run_request(payload)?;
    let run = prepare_run(app, thread_id.cloned(), req).await?;
    Ok(run.row.assistant_id)
}

/// A payload as a run request: a field a run request does not take is a 422.
fn run_request(payload: &Map<String, Value>) -> Result<RunCreate, ApiError> {
    crate::error::decode_at(Value::Object(payload.clone()), "$")
}

/// The cron a create request makes (for `thread_id`, or stateless), checked.
pub(crate) async fn cron_of(
    app: &App,
    thread_id: Option<String>,
    req: CronCreate,
) -> Result<CronRow, ApiError> {
    let schedule = Schedule::parse(&req.schedule, req.timezone.as_deref())?;
    let end_time = req
        .end_time
        .as_deref()
        .map(|t| parse_time(t, "$.end_time"))
        .transpose()?;
    if end_time.is_some_and(|end| end <= now_ms()) {
        return Err(ApiError::invalid(
            "$.end_time",
            "is in the past: the cron would never fire",
        ));
    }
    let assistant_id = check_payload(app, thread_id.as_ref(), &req.run).await?;
    let stateless = thread_id.is_none();
    Ok(CronRow {
        cron_id: uuid::Uuid::new_v4().to_string(),
        assistant_id,
        thread_id,
        schedule: req.schedule,
        timezone: req.timezone,
        end_time,
        enabled: req.enabled.unwrap_or(true),
        on_run_completed: stateless.then(|| {
            req.on_run_completed
                .unwrap_or(OnCompletion::Delete)
                .as_str()
                .to_string()
        }),
        metadata: match req.run.get("metadata") {
            Some(Value::Object(m)) => m.clone(),
            _ => Map::new(),
        },
        payload: req.run,
        next_run_at: first_tick(&schedule, end_time),
        created_at: 0,
        updated_at: 0,
    })
}

/// The cron after `patch`, checked, and whether its next tick is computed again.
pub(crate) async fn patch_cron(
    app: &App,
    mut cron: CronRow,
    patch: CronPatch,
) -> Result<(CronRow, bool), ApiError> {
    let mut reschedule = false;
    if let Some(s) = patch.schedule {
        cron.schedule = s;
        reschedule = true;
    }
    if let Some(tz) = patch.timezone {
        cron.timezone = Some(tz);
        reschedule = true;
    }
    if let Some(end) = patch.end_time {
        cron.end_time = end
            .as_deref()
            .map(|t| parse_time(t, "$.end_time"))
            .transpose()?;
        if cron.end_time.is_some_and(|end| end <= now_ms()) {
            return Err(ApiError::invalid(
                "$.end_time",
                "is in the past: the cron would never fire",
            ));
        }
        reschedule = true;
    }
    if let Some(enabled) = patch.enabled {
        // Turned back on: from now, not from the ticks it slept through.
        reschedule |= enabled && !cron.enabled;
        cron.enabled = enabled;
    }
    if let Some(keep) = patch.on_run_completed
        && cron.thread_id.is_none()
    {
        cron.on_run_completed = Some(keep.as_str().to_string());
    }
    let schedule = Schedule::parse(&cron.schedule, cron.timezone.as_deref())?;
    if !patch.run.is_empty() {
        cron.payload.extend(patch.run);
        if let Some(Value::Object(m)) = cron.payload.get("metadata") {
            cron.metadata = m.clone();
        }
        cron.assistant_id = check_payload(app, cron.thread_id.as_ref(), &cron.payload).await?;
    }
    if reschedule {
        cron.next_run_at = first_tick(&schedule, cron.end_time);
    }
    Ok((cron, reschedule))
}

/// Fires due crons until `stop` turns true: sleeps until the earliest next tick
/// (at most [`POLL`]), then claims and queues what is due.
pub(crate) async fn schedule_crons(app: Arc<App>, mut stop: watch::Receiver<bool>) {
    loop {
        let (seen, claimed) = fire_due(&app).await;
        let wait = if seen == BATCH {
            Duration::ZERO
        } else {
            let next = app.db.next_cron_tick().await.ok().flatten();
            let until = next.map_or(POLL, |t| {
                Duration::from_millis(u64::try_from(t - now_ms()).unwrap_or(0))
            });
            let floor = if claimed { Duration::ZERO } else { BACKOFF };
            until.clamp(floor, POLL)
        };
        tokio::select! {
            _ = stop.changed() => return,
            () = tokio::time::sleep(wait) => {}
        }
    }
}

/// One pass: how many due crons it saw, and whether it claimed any firing.
async fn fire_due(app: &Arc<App>) -> (usize, bool) {
    let now = now_ms();
    let due = match app.db.due_crons(now, BATCH).await {
        Ok(due) => due,
        Err(e) => {
            tracing::warn!(error = %e, "reading due crons failed; retrying");
            return (0, false);
        }
    };
    let mut claimed = false;
    for cron in &due {
        let span = tracing::info_span!("stategraph.server.cron", cron_id = %cron.cron_id);
        claimed |= tracing::Instrument::instrument(fire(app, cron, now), span).await;
    }
    (due.len(), claimed)
}

/// Fires one due cron's tick; whether this process claimed it.
async fn fire(app: &Arc<App>, cron: &CronRow, now: i64) -> bool {
    let Some(due) = cron.next_run_at else {
        return false;
    };
    let over = cron.end_time.is_some_and(|end| due > end);
    let schedule = Schedule::parse(&cron.schedule, cron.timezone.as_deref());
    let (next, missed) = match &schedule {
        Ok(s) => (
            s.next_after(now)
                .filter(|t| cron.end_time.is_none_or(|end| *t <= end)),
            s.ticks_between(due, now),
        ),
        Err(e) => {
            tracing::warn!(error = %e, "a stored cron's schedule does not parse; it stops");
            (None, 0)
        }
    };
    let run = if over || schedule.is_err() {
        None
    } else {
        match firing_run(app, cron, due, missed).await {
            Ok(run) => Some(run),
            Err(e) => {
                tracing::warn!(error = %e, "a cron's run could not be made; the tick is skipped");
                None
            }
        }
    };
    let delete_thread = run.as_ref().is_some_and(|_| {
        cron.thread_id.is_none() && cron.on_run_completed.as_deref() != Some("keep")
    });
    let mut firing = Firing {
        cron_id: cron.cron_id.clone(),
        due,
        next,
        run,
    };
    let fired = match app.db.fire_cron(firing.clone()).await {
        // The run cannot be queued (a `reject` cron on a busy thread): the tick
        // is skipped, claimed all the same.
        Err(DbError::Conflict(why)) => {
            tracing::warn!(reason = %why, "a cron's run was refused; the tick is skipped");
            firing.run = None;
            app.db.fire_cron(firing).await
        }
        other => other,
    };
    match fired {
        Ok(Fired::Claimed(Some(row))) => {
            if let Err(e) = announce_queued(app, &row).await {
                tracing::warn!(error = %e, "announcing a cron's run failed");
            }
            if delete_thread {
                let app = app.clone();
                tokio::spawn(async move {
                    delete_after(&app, &row.thread_id, &row.run_id).await;
                });
            }
            true
        }
        Ok(Fired::Claimed(None)) => true,
        Ok(Fired::Taken) => false,
        Err(e) => {
            tracing::warn!(error = %e, "firing a cron failed; it is retried");
            false
        }
    }
}

/// The run a cron's tick makes: its payload, checked now (the graph, the thread),
/// with the cron, the tick and the ticks it stands for in its metadata.
async fn firing_run(
    app: &App,
    cron: &CronRow,
    due: i64,
    missed: usize,
) -> Result<NewRun, ApiError> {
    let mut req = run_request(&cron.payload)?;
    if cron.thread_id.is_none() {
        req.on_completion = Some(match cron.on_run_completed.as_deref() {
            Some("keep") => OnCompletion::Keep,
            _ => OnCompletion::Delete,
        });
    }
    let mut run = prepare_run(app, cron.thread_id.clone(), req).await?;
    let meta = &mut run.row.metadata;
    meta.insert("cron_id".into(), cron.cron_id.clone().into());
    meta.insert("cron_tick".into(), crate::wire::time(due).into());
    if missed > 0 {
        meta.insert("cron_missed".into(), missed.into());
    }
    if cron.thread_id.is_none() {
        run.thread_metadata
            .insert("cron_id".into(), cron.cron_id.clone().into());
    }
    Ok(run)
}
