//! Stopping runs: `POST /threads/{id}/runs/{run}/cancel` and `POST /runs/cancel`.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;

use super::runs::wait_for;
use super::threads::thread;
use super::{Body, Params};
use crate::app::App;
use crate::db::RunStatus;
use crate::error::ApiError;
use crate::hub::Notice;

#[derive(Debug, Default, Deserialize)]
pub(super) struct CancelParams {
    #[serde(default, deserialize_with = "super::flag")]
    wait: Option<bool>,
    #[serde(default)]
    action: Option<String>,
}

/// Asks a run to stop; with `wait`, returns once it ended.
pub(crate) async fn cancel_run(
    app: &App,
    thread_id: &str,
    run_id: &str,
    action: &str,
    wait: bool,
) -> Result<(), ApiError> {
    if action != "interrupt" && action != "rollback" {
        return Err(ApiError::invalid(
            "action",
            format!("expected `interrupt` or `rollback`, not `{action}`"),
        ));
    }
    let run = app
        .db
        .cancel_run(
            thread_id.to_string(),
            run_id.to_string(),
            action.to_string(),
        )
        .await?
        .ok_or_else(|| ApiError::not_found(format!("run {run_id} of thread {thread_id}")))?;
    if run.status.is_final() {
        app.notify(Notice::Ended(run_id.to_string())).await;
        return Ok(());
    }
    app.notify(Notice::Cancel(run_id.to_string())).await;
    if wait {
        match wait_for(app, thread_id, run_id).await {
            Ok(_) => {}
            // A rolled-back run is deleted once it stopped.
            Err(e) if e.status == StatusCode::NOT_FOUND => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

pub(super) async fn cancel(
    State(app): State<Arc<App>>,
    Path((id, run_id)): Path<(String, String)>,
    Params(p): Params<CancelParams>,
) -> Result<StatusCode, ApiError> {
    let wait = p.wait.unwrap_or(false);
    cancel_run(
        &app,
        &id,
        &run_id,
        p.action.as_deref().unwrap_or("interrupt"),
        wait,
    )
    .await?;
    Ok(if wait {
        StatusCode::NO_CONTENT
    } else {
        StatusCode::ACCEPTED
    })
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct CancelMany {
    #[serde(default)]
    thread_id: Option<String>,
    #[serde(default)]
    run_ids: Option<Vec<String>>,
    #[serde(default)]
    status: Option<String>,
}

/// `POST /runs/cancel`: cancels the named runs, or a thread's active runs (`status`:
/// `pending`, `running` or `all`).
pub(super) async fn cancel_many(
    State(app): State<Arc<App>>,
    Params(p): Params<CancelParams>,
    Body(req): Body<CancelMany>,
) -> Result<StatusCode, ApiError> {
    let action = p.action.as_deref().unwrap_or("interrupt");
    let wanted: &[RunStatus] = match req.status.as_deref() {
        None | Some("all") => &[RunStatus::Pending, RunStatus::Running],
        Some("pending") => &[RunStatus::Pending],
        Some("running") => &[RunStatus::Running],
        Some(other) => {
            return Err(ApiError::invalid(
                "$.status",
                format!("expected pending, running or all, not `{other}`"),
            ));
        }
    };
    let targets: Vec<(String, String)> = match (&req.thread_id, &req.run_ids) {
        (Some(thread), Some(ids)) => ids.iter().map(|r| (thread.clone(), r.clone())).collect(),
        (None, Some(ids)) => {
            let mut found = Vec::new();
            for id in ids {
                let run = app
                    .db
                    .get_run(None, id.clone())
                    .await?
                    .ok_or_else(|| ApiError::not_found(format!("run {id}")))?;
                found.push((run.thread_id, run.run_id));
            }
            found
        }
        (Some(thread), None) => {
            thread_row(&app, thread).await?;
            let mut found = Vec::new();
            for status in wanted {
                for run in app
                    .db
                    .list_runs(thread.clone(), Some(*status), 1000, 0)
                    .await?
                {
                    found.push((run.thread_id, run.run_id));
                }
            }
            found
        }
        (None, None) => return Err(ApiError::invalid("$", "name a `thread_id` or `run_ids`")),
    };
    for (thread, run) in targets {
        cancel_run(&app, &thread, &run, action, false).await?;
    }
    Ok(StatusCode::NO_CONTENT)
}

async fn thread_row(app: &App, id: &str) -> Result<(), ApiError> {
    thread(app, id).await.map(|_| ())
}
