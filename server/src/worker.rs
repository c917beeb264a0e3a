//! Workers: each claims the oldest runnable run from the queue, runs it while
//! renewing its lease, stores its events for streaming clients and ends it. A
//! worker that dies leaves a lease that expires; another claims the run and
//! continues from its last checkpoint, so no finished task runs twice.
//!
//! A worker that stalls (a paused process) past its lease is fenced: its run holds
//! a [`RunLease`] that lapses with the lease, after which it starts no step and
//! saves nothing; the attempt number of its claim no longer matches, so the
//! database refuses its renewals and its finish; and the worker that took the run
//! over decides under the thread's lock where to continue from, after the stalled
//! one has let go.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use stategraph::RunLease;
use tokio::sync::{broadcast, mpsc, watch};

use crate::app::App;
use crate::db::{Claim, Finish, Lease, RunRow, RunStatus, ThreadStatus};
use crate::hub::Notice;
use crate::served::{RunEnd, RunRequest, Served};
use crate::wire::RunKwargs;

/// How long an idle worker waits for a wake-up before looking again anyway.
const IDLE_POLL: Duration = Duration::from_millis(500);

/// A run's request as stored in its `kwargs`; a row that does not decode is an
/// error naming why (the run fails with it, never runs with defaults).
pub(crate) fn request_of(run: &RunRow, lease: RunLease) -> Result<RunRequest, String> {
    let kwargs = serde_json::from_value::<RunKwargs>(run.kwargs.clone())
        .map_err(|e| format!("run {}'s stored request does not decode: {e}", run.run_id))?;
    let mut request = RunRequest::of(&run.thread_id, &run.run_id, kwargs, run.metadata.clone())
        .map_err(|e| format!("run {}'s stored request: {}", run.run_id, e.detail))?;
    request.retry = run.attempt > 1;
    request.lease = Some(lease);
    Ok(request)
}

/// Runs `jobs` worker loops until `shutdown` turns true; each hands back the run
/// it holds (lease released) when it stops mid-run.
pub(crate) fn spawn(
    app: Arc<App>,
    worker_id: String,
    jobs: usize,
    shutdown: watch::Receiver<bool>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let mut handles: Vec<_> = (0..jobs)
        .map(|slot| {
            let app = app.clone();
            let id = format!("{worker_id}/{slot}");
            let shutdown = shutdown.clone();
            tokio::spawn(async move { work(app, id, shutdown).await })
        })
        .collect();
    if jobs > 0 {
        handles.push(tokio::spawn(crate::lifecycle::schedule_crons(
            app.clone(),
            shutdown.clone(),
        )));
        handles.push(tokio::spawn(crate::webhook::deliver_webhooks(
            app.clone(),
            shutdown.clone(),
        )));
        handles.push(tokio::spawn(crate::retention::sweep_threads(
            app.clone(),
            shutdown.clone(),
        )));
    }
    let sweeper = app.clone();
    let mut stop = shutdown;
    handles.push(tokio::spawn(async move {
        let every = (sweeper.limits.event_retention / 4).max(Duration::from_secs(1));
        loop {
            tokio::select! {
                _ = stop.changed() => break,
                () = tokio::time::sleep(every) => {
                    if let Err(e) = sweeper.db.sweep_events(sweeper.limits.event_retention).await {
                        tracing::warn!(error = %e, "sweeping old run events failed");
                    }
                }
            }
        }
    }));
    handles
}

async fn work(app: Arc<App>, worker: String, mut shutdown: watch::Receiver<bool>) {
    loop {
        if *shutdown.borrow() {
            return;
        }
        // Listen before looking: a run queued, or a cancel sent for the run about to
        // be claimed, after this point is heard (older notices are in the tables).
        let mut notices = app.hub.subscribe();
        // The lease is counted from before the claim was asked for, so it never
        // outlasts the one the database granted.
        let asked = Instant::now();
        match app.db.claim_run(worker.clone(), app.limits.lease).await {
            Ok(Some(run)) => {
                let claim = Claim::of(&run, &worker);
                let lease = RunLease::until(asked + app.limits.lease);
                let span = tracing::info_span!("stategraph.server.run", run_id = %run.run_id, thread_id = %run.thread_id, attempt = run.attempt);
                let held = Held {
                    claim: &claim,
                    lease,
                };
                let stopped = tracing::Instrument::instrument(
                    execute(&app, held, run, &mut notices, &mut shutdown),
                    span,
                )
                .await;
                if stopped {
                    if let Err(e) = app.db.release_run(claim).await {
                        tracing::warn!(error = %e, "could not hand back a run at shutdown");
                    }
                    app.notify(Notice::Queued).await;
                    return;
                }
                // Finishing a run may unblock the next one of its thread.
                app.hub.local(Notice::Queued);
            }
            Ok(None) => {
                tokio::select! {
                    _ = shutdown.changed() => {}
                    () = tokio::time::sleep(IDLE_POLL) => {}
                    _ = async { loop { match notices.recv().await {
                        Ok(Notice::Queued) | Err(_) => break,
                        Ok(_) => continue,
                    } } } => {}
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "claiming a run failed; retrying");
                tokio::time::sleep(IDLE_POLL).await;
            }
        }
    }
}

/// A run a worker holds: its claim, and the lease its graph run checks.
struct Held<'a> {
    claim: &'a Claim,
    lease: RunLease,
}

impl Held<'_> {
    /// Renews the lease; on success the local lease is extended from when the
    /// renewal was asked for.
    async fn renew(&self, app: &App) -> Result<Lease, crate::db::DbError> {
        let asked = Instant::now();
        let lease = app
            .db
            .renew_lease(self.claim.clone(), app.limits.lease)
            .await?;
        match &lease {
            Lease::Held { .. } => self.lease.extend(asked + app.limits.lease),
            Lease::Lost => self.lease.expire(),
        }
        Ok(lease)
    }
}

/// Why a run stopped before its graph ended.
enum Stop {
    Cancel(String),
    LeaseLost,
    Shutdown,
}

/// Runs one claimed run to its end, hearing cancels on `notices` (subscribed before
/// the claim). Returns true when it stopped for shutdown (the run goes back to the
/// queue).
async fn execute(
    app: &Arc<App>,
    held: Held<'_>,
    run: RunRow,
    notices: &mut broadcast::Receiver<Notice>,
    shutdown: &mut watch::Receiver<bool>,
) -> bool {
    // A run claimed again (its worker died or stalled) continues from what it saved.
    let prepared = request_of(&run, held.lease.clone()).and_then(|request| {
        let graph = match &request.graph_id {
            Some(graph_id) => app.graph_named(graph_id),
            None => app.assistant(&run.assistant_id).map(|a| a.graph.clone()),
        };
        Ok((graph.map_err(|e| e.detail)?, request))
    });
    let (graph, request) = match prepared {
        Ok(both) => both,
        Err(e) => {
            finish(
                app,
                held.claim,
                &run,
                RunStatus::Error,
                ThreadStatus::Error,
                None,
                json!({}),
                error_output(&e),
                false,
            )
            .await;
            return false;
        }
    };
    // What a resume starts from, to roll it back exactly if asked to.
    let before = match run.attempt {
        1 => crate::rollback::before(app, &run).await,
        _ => None,
    };
    append(
        app,
        &run.run_id,
        vec![(
            "metadata".into(),
            json!({ "run_id": run.run_id, "attempt": run.attempt }),
        )],
    )
    .await;

    let (tx, mut rx) = mpsc::channel::<(String, Value)>(256);
    let mut running = graph.run(request, tx);
    let mut beat = tokio::time::interval(app.limits.lease / 3);
    beat.tick().await;
    let mut events_open = true;
    let outcome: Result<RunEnd, Stop> = loop {
        let lapses = tokio::time::Instant::from_std(held.lease.deadline());
        tokio::select! {
            biased;
            // First: a worker waking from a stall past its lease stops before it
            // stores anything else.
            () = tokio::time::sleep_until(lapses) => break Err(Stop::LeaseLost),
            end = &mut running => break Ok(end),
            batch = next_batch(&mut rx), if events_open => match batch {
                Some(batch) => append(app, &run.run_id, batch).await,
                None => events_open = false,
            },
            _ = beat.tick() => match held.renew(app).await {
                Ok(Lease::Held { cancel: Some(action) }) => break Err(Stop::Cancel(action)),
                Ok(Lease::Held { cancel: None }) => {}
                Ok(Lease::Lost) => break Err(Stop::LeaseLost),
                Err(e) => tracing::warn!(error = %e, "renewing a lease failed"),
            },
            notice = notices.recv() => {
                // A cancel of this run, or notices missed (a lagging receiver): look.
                let look = match &notice {
                    Ok(Notice::Cancel(id)) => *id == run.run_id,
                    Ok(_) => false,
                    Err(_) => true,
                };
                if look
                    && let Ok(Lease::Held { cancel: Some(action) }) = held.renew(app).await {
                    break Err(Stop::Cancel(action));
                }
            }
            _ = shutdown.changed() => break Err(Stop::Shutdown),
        }
    };
    drop(running);
    // A run whose lease lapsed meanwhile is another worker's now (or will be): this
    // one stores nothing more of it.
    let outcome = match outcome {
        Ok(_) if !held.lease.is_held() => Err(Stop::LeaseLost),
        other => other,
    };
    if matches!(outcome, Err(Stop::LeaseLost)) {
        tracing::warn!("lost the lease of a run: another worker continues it");
        return false;
    }
    // Events the run sent before it ended.
    let mut rest = Vec::new();
    while let Ok(e) = rx.try_recv() {
        rest.push(e);
    }
    if !rest.is_empty() {
        append(app, &run.run_id, rest).await;
    }
    conclude(
        app,
        held.claim,
        &run,
        graph.as_ref(),
        outcome,
        before.as_ref(),
    )
    .await
}

/// Ends a run its worker still holds as `outcome` says; true when it stopped for
/// shutdown (the run goes back to the queue).
async fn conclude(
    app: &App,
    claim: &Claim,
    run: &RunRow,
    graph: &dyn Served,
    outcome: Result<RunEnd, Stop>,
    before: Option<&crate::rollback::Before>,
) -> bool {
    match outcome {
        Ok(RunEnd::Done {
            values,
            interrupts,
            paused,
        }) => {
            // As LangGraph reports it: a run that stopped with tasks left (an interrupt
            // or a static breakpoint) leaves its thread interrupted.
            let status = if paused {
                ThreadStatus::Interrupted
            } else {
                ThreadStatus::Idle
            };
            let mut output = values.clone();
            if interrupts.as_array().is_some_and(|a| !a.is_empty())
                && let Value::Object(o) = &mut output
            {
                o.insert("__interrupt__".into(), interrupts.clone());
            }
            finish(
                app,
                claim,
                run,
                RunStatus::Success,
                status,
                Some(values),
                interrupts,
                output,
                false,
            )
            .await;
        }
        Ok(RunEnd::Failed { values, error }) => {
            append(
                app,
                &run.run_id,
                vec![(
                    "error".into(),
                    json!({ "error": "RunError", "message": error }),
                )],
            )
            .await;
            let latest = graph.latest(&run.thread_id).await.ok().flatten();
            let (values, interrupts) = latest.map_or((values, json!([])), |(v, i)| (Some(v), i));
            finish(
                app,
                claim,
                run,
                RunStatus::Error,
                ThreadStatus::Error,
                values,
                interrupts,
                error_output(&error),
                false,
            )
            .await;
        }
        Err(Stop::Cancel(action)) => {
            let rollback = action == "rollback";
            if rollback && let Err(e) = crate::rollback::roll_back(app, run, before).await {
                tracing::error!(error = %e.detail, "rolling back a run failed");
            }
            let latest = graph.latest(&run.thread_id).await.ok().flatten();
            let (values, interrupts) = latest.map_or((json!({}), json!([])), |(v, i)| (v, i));
            let status = if interrupts.as_array().is_some_and(|a| !a.is_empty()) {
                ThreadStatus::Interrupted
            } else {
                ThreadStatus::Idle
            };
            finish(
                app,
                claim,
                run,
                RunStatus::Interrupted,
                status,
                Some(values.clone()),
                interrupts,
                values,
                rollback,
            )
            .await;
        }
        Err(Stop::LeaseLost) => {}
        Err(Stop::Shutdown) => return true,
    }
    false
}

/// Up to 64 events that are ready, waiting for the first.
async fn next_batch(rx: &mut mpsc::Receiver<(String, Value)>) -> Option<Vec<(String, Value)>> {
    let first = rx.recv().await?;
    let mut batch = vec![first];
    while batch.len() < 64 {
        match rx.try_recv() {
            Ok(e) => batch.push(e),
            Err(_) => break,
        }
    }
    Some(batch)
}

/// Stores events, retrying a failed write a few times (a busy database); a stream
/// that still cannot be stored is logged as an error, as the run goes on.
async fn append(app: &App, run_id: &str, events: Vec<(String, Value)>) {
    let mut wait = Duration::from_millis(20);
    for attempt in 1..=5 {
        match app
            .db
            .append_events(run_id.to_string(), events.clone())
            .await
        {
            Ok(_) => return app.notify(Notice::Events(run_id.to_string())).await,
            Err(e) if attempt == 5 => {
                tracing::error!(error = %e, lost = events.len(), "storing run events failed; streaming clients miss them");
            }
            Err(e) => {
                tracing::warn!(error = %e, attempt, "storing run events failed; retrying");
                tokio::time::sleep(wait).await;
                wait *= 2;
            }
        }
    }
}

fn error_output(message: &str) -> Value {
    json!({ "__error__": { "error": "RunError", "message": message } })
}

#[allow(clippy::too_many_arguments)]
async fn finish(
    app: &App,
    claim: &Claim,
    run: &RunRow,
    status: RunStatus,
    thread_status: ThreadStatus,
    values: Option<Value>,
    interrupts: Value,
    output: Value,
    delete_run: bool,
) {
    let webhook = if delete_run {
        None
    } else {
        crate::webhook::delivery_of(run, status, values.as_ref(), &output)
    };
    let calls = webhook.is_some();
    let finish = Finish {
        status,
        thread_status,
        values,
        interrupts,
        output,
        delete_run,
        webhook,
    };
    match app.db.finish_run(claim.clone(), finish).await {
        Ok(true) => {
            if calls {
                app.deliveries.notify_one();
            }
            append(app, &run.run_id, vec![("end".into(), Value::Null)]).await;
            app.notify(Notice::Ended(run.run_id.clone())).await;
        }
        Ok(false) => {
            tracing::warn!("a run ended after its lease was lost; another worker holds it")
        }
        Err(e) => tracing::error!(error = %e, "could not store a run's end"),
    }
}
