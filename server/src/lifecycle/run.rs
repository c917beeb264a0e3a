//! Waiting for a run's end, asking it to stop, deleting a stateless run's thread.

use std::time::Duration;

use axum::http::StatusCode;
use serde_json::{Map, Value};

use crate::app::App;
use crate::db::{RunRow, RunStatus};
use crate::error::ApiError;
use crate::hub::Notice;
use crate::wire::{CancelAction, MultitaskStrategy};

/// Wakes what a newly queued run concerns: idle workers, the thread's streams,
/// and — for `interrupt` and `rollback` — the thread's running runs, asked to stop.
pub(crate) async fn announce_queued(app: &App, row: &RunRow) -> Result<(), ApiError> {
    app.notify(Notice::Queued).await;
    app.notify(Notice::Events(crate::db::thread_events_key(&row.thread_id)))
        .await;
    if row.multitask_strategy == MultitaskStrategy::Interrupt.as_str()
        || row.multitask_strategy == MultitaskStrategy::Rollback.as_str()
    {
        for other in app
            .db
            .list_runs(row.thread_id.clone(), Some(RunStatus::Running), 100, 0)
            .await?
        {
            app.notify(Notice::Cancel(other.run_id)).await;
        }
    }
    Ok(())
}

/// Waits until the run ends; its output (the thread's values, `__interrupt__` when
/// it paused, `__error__` when it failed).
pub(crate) async fn wait_for(app: &App, thread_id: &str, run_id: &str) -> Result<Value, ApiError> {
    let waker = app.hub.run_waker(run_id);
    loop {
        // Listen before looking, so an end stored in between still wakes us.
        let notified = waker.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let run = app
            .db
            .get_run(Some(thread_id.to_string()), run_id.to_string())
            .await?
            .ok_or_else(|| ApiError::not_found(format!("run {run_id} of thread {thread_id}")))?;
        if run.status.is_final() {
            return Ok(run.output.unwrap_or_else(|| Value::Object(Map::new())));
        }
        if *app.stopping.borrow() {
            return Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "the server is shutting down; run {run_id} goes on elsewhere: join it again"
                ),
            ));
        }
        let mut stopping = app.stopping.clone();
        let _ = tokio::time::timeout(Duration::from_secs(1), async {
            tokio::select! {
                () = notified => {}
                _ = stopping.changed() => {}
            }
        })
        .await;
    }
}

/// Asks a run to stop; with `wait`, returns once it ended.
pub(crate) async fn cancel_run(
    app: &App,
    thread_id: &str,
    run_id: &str,
    action: CancelAction,
    wait: bool,
) -> Result<(), ApiError> {
    let run = app
        .db
        .cancel_run(
            thread_id.to_string(),
            run_id.to_string(),
            action.as_str().to_string(),
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

/// Deletes a stateless run's thread once the run ended.
pub(crate) async fn delete_after(app: &App, thread_id: &str, run_id: &str) {
    if wait_for(app, thread_id, run_id).await.is_ok() {
        if let Err(e) = app.saver.delete_thread(thread_id).await {
            tracing::warn!(error = %e, "deleting a stateless run's checkpoints failed");
        }
        if let Err(e) = app.db.delete_thread(thread_id.to_string()).await {
            tracing::warn!(error = %e, "deleting a stateless run's thread failed");
        }
    }
}
