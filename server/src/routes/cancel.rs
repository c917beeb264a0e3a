//! Stopping runs: `POST /threads/{id}/runs/{run}/cancel` and `POST /runs/cancel`.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::runs::RunPath;
use super::threads::thread;
use super::{Body, Params};
use crate::app::App;
use crate::db::RunStatus;
use crate::error::{ApiError, Refusals};
use crate::lifecycle::cancel_run;
use crate::wire::CancelAction;

pub(super) fn routes() -> OpenApiRouter<Arc<App>> {
    OpenApiRouter::new()
        .routes(routes!(cancel))
        .routes(routes!(cancel_many))
}

#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct CancelParams {
    /// Answer once the run ended (`true`/`false`/`1`/`0`).
    #[serde(default, deserialize_with = "super::flag")]
    wait: Option<bool>,
    /// How the run stops.
    #[serde(default)]
    action: Option<CancelAction>,
}

/// Asks a run to stop (`interrupt` keeps what it saved, `rollback` deletes it).
#[utoipa::path(post, path = "/threads/{thread_id}/runs/{run_id}/cancel", tag = "runs",
    params(RunPath, CancelParams),
    responses((status = 202, description = "Asked to stop."), (status = 204, description = "Stopped (`wait`)."), Refusals))]
pub(super) async fn cancel(
    State(app): State<Arc<App>>,
    Path((id, run_id)): Path<(String, String)>,
    Params(p): Params<CancelParams>,
) -> Result<StatusCode, ApiError> {
    let wait = p.wait.unwrap_or(false);
    cancel_run(&app, &id, &run_id, p.action.unwrap_or_default(), wait).await?;
    Ok(if wait {
        StatusCode::NO_CONTENT
    } else {
        StatusCode::ACCEPTED
    })
}

/// `POST /runs/cancel`.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
pub(super) struct CancelMany {
    #[serde(default)]
    thread_id: Option<String>,
    #[serde(default)]
    run_ids: Option<Vec<String>>,
    #[serde(default)]
    status: Option<String>,
}

/// Cancels the named runs, or a thread's active runs.
///
/// By `status`: `pending`, `running` or `all`.
#[utoipa::path(post, path = "/runs/cancel", tag = "runs", params(CancelParams),
    request_body = CancelMany,
    responses((status = 202, description = "Asked to stop."), (status = 204, description = "Stopped (`wait`)."), Refusals))]
pub(super) async fn cancel_many(
    State(app): State<Arc<App>>,
    Params(p): Params<CancelParams>,
    Body(req): Body<CancelMany>,
) -> Result<StatusCode, ApiError> {
    let action = p.action.unwrap_or_default();
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
