//! The deliverer: claims what is due, makes each call, marks it made or due again
//! later.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::app::App;
use crate::db::{DeliveryRow, now_ms};

/// Most deliveries one pass claims.
const BATCH: usize = 16;
/// The longest the deliverer sleeps: how soon it sees calls another process queued.
const POLL: Duration = Duration::from_secs(1);
/// The shortest it sleeps after a pass that made no call.
const BACKOFF: Duration = Duration::from_millis(25);
/// The longest wait between two attempts of a call.
const MAX_WAIT: Duration = Duration::from_secs(300);

/// Makes due calls until `stop` turns true, sleeping until the next is due (at
/// most [`POLL`]) or this process queues one.
pub(crate) async fn deliver_webhooks(app: Arc<App>, mut stop: watch::Receiver<bool>) {
    loop {
        let now = now_ms();
        let hold = app
            .webhooks
            .config
            .timeout
            .saturating_add(Duration::from_secs(5));
        let until = now.saturating_add(i64::try_from(hold.as_millis()).unwrap_or(i64::MAX));
        let due = match app.db.claim_deliveries(now, until, BATCH).await {
            Ok(due) => due,
            Err(e) => {
                tracing::warn!(error = %e, "claiming webhook calls failed; retrying");
                Vec::new()
            }
        };
        futures::future::join_all(due.iter().map(|d| attempt(&app, d))).await;
        let wait = if due.len() == BATCH {
            Duration::ZERO
        } else {
            let next = app.db.next_delivery().await.ok().flatten();
            let until = next.map_or(POLL, |t| {
                Duration::from_millis(u64::try_from(t - now_ms()).unwrap_or(0))
            });
            until.clamp(
                if due.is_empty() {
                    BACKOFF
                } else {
                    Duration::ZERO
                },
                POLL,
            )
        };
        tokio::select! {
            _ = stop.changed() => return,
            () = tokio::time::sleep(wait) => {}
            () = app.deliveries.notified() => {}
        }
    }
}

/// One attempt of one call, and its outcome stored.
async fn attempt(app: &App, d: &DeliveryRow) {
    let span =
        tracing::info_span!("stategraph.server.webhook", run_id = %d.run_id, attempt = d.attempt);
    let outcome = tracing::Instrument::instrument(app.webhooks.send(d), span).await;
    let stored = match outcome {
        Ok(()) => app.db.delivered(d.delivery_id.clone()).await,
        Err(why) => {
            let last = u32::try_from(d.attempt).unwrap_or(u32::MAX) >= app.webhooks.config.attempts;
            let retry_at = (!last).then(|| {
                let exp = u32::try_from(d.attempt.saturating_sub(1))
                    .unwrap_or(0)
                    .min(16);
                let wait = Duration::from_secs(1u64 << exp).min(MAX_WAIT);
                now_ms().saturating_add(i64::try_from(wait.as_millis()).unwrap_or(i64::MAX))
            });
            if last {
                tracing::error!(run_id = %d.run_id, attempt = d.attempt, error = %why, "a webhook call failed its last attempt; given up");
            } else {
                tracing::warn!(run_id = %d.run_id, attempt = d.attempt, error = %why, "a webhook call failed; it is retried");
            }
            app.db
                .attempt_failed(d.delivery_id.clone(), d.attempt, retry_at, why)
                .await
        }
    };
    if let Err(e) = stored {
        tracing::warn!(error = %e, "storing a webhook call's outcome failed");
    }
}
