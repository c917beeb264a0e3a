//! Server-sent events of a run, read from its stored events: the same stream for a
//! client that started the run, one that re-attaches (`Last-Event-ID`), and one
//! connected to another process than the run's worker.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;

use crate::app::App;
use crate::db::EventRow;
use crate::events::Modes;

/// How long a quiet stream waits before checking the run's status itself.
const RECHECK: Duration = Duration::from_secs(1);

/// What happens when the client goes away before the run ends.
#[derive(Clone, Debug, Default)]
pub(crate) struct Detach {
    /// Cancel the run (`on_disconnect: "cancel"`).
    pub(crate) cancel: bool,
    /// Delete the thread once the run ended (a stateless run's).
    pub(crate) delete_thread: bool,
}

struct Tail {
    app: Arc<App>,
    run_id: String,
    thread_id: String,
    after: i64,
    buffer: VecDeque<EventRow>,
    waker: std::sync::Arc<tokio::sync::Notify>,
    done: bool,
    detach: Detach,
    /// The modes a join asked for (all the run's when `None`).
    modes: Option<Modes>,
}

impl Drop for Tail {
    fn drop(&mut self) {
        let (app, run, thread) = (
            self.app.clone(),
            self.run_id.clone(),
            self.thread_id.clone(),
        );
        let (done, detach) = (self.done, self.detach.clone());
        if (detach.cancel && !done) || detach.delete_thread {
            tokio::spawn(async move {
                if detach.cancel
                    && !done
                    && let Err(e) = super::run::cancel_run(
                        &app,
                        &thread,
                        &run,
                        crate::wire::CancelAction::Interrupt,
                        true,
                    )
                    .await
                {
                    tracing::warn!(error = %e.detail, "cancelling a run whose client went away failed");
                }
                if detach.delete_thread {
                    super::run::delete_after(&app, &thread, &run).await;
                }
            });
        }
    }
}

impl Tail {
    async fn next(&mut self) -> Option<EventRow> {
        loop {
            if let Some(e) = self.buffer.pop_front() {
                self.after = e.seq;
                if e.event == "end" {
                    self.done = true;
                }
                if self.modes.is_none_or(|m| m.carries(&e.event)) {
                    return Some(e);
                }
                continue;
            }
            if self.done {
                return None;
            }
            // Listen before looking, so an event stored in between still wakes us.
            let waker = self.waker.clone();
            let notified = waker.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            match self
                .app
                .db
                .events_after(self.run_id.clone(), self.after, 256)
                .await
            {
                Ok(rows) if !rows.is_empty() => {
                    self.buffer.extend(rows);
                    continue;
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "reading run events failed");
                }
            }
            // Nothing new: wait for a wake-up, then look again; a run that ended
            // without an `end` event (its rows were swept, or it was deleted) ends
            // the stream.
            if *self.app.stopping.borrow() {
                // The server is going away: the client re-attaches elsewhere.
                return None;
            }
            let mut stopping = self.app.stopping.clone();
            let woke = tokio::time::timeout(RECHECK, async {
                tokio::select! {
                    () = notified => {}
                    _ = stopping.changed() => {}
                }
            })
            .await;
            if woke.is_err() {
                match self.app.db.get_run(None, self.run_id.clone()).await {
                    Ok(Some(r)) if !r.status.is_final() => {}
                    Ok(_) => {
                        // One last read: the final events may have landed meanwhile.
                        if let Ok(rows) = self
                            .app
                            .db
                            .events_after(self.run_id.clone(), self.after, 256)
                            .await
                            && !rows.is_empty()
                        {
                            self.buffer.extend(rows);
                            continue;
                        }
                        self.done = true;
                        self.after += 1;
                        return Some(EventRow {
                            seq: self.after,
                            event: "end".into(),
                            data: serde_json::Value::Null,
                        });
                    }
                    Err(e) => tracing::warn!(error = %e, "reading a run failed"),
                }
            }
        }
    }
}

/// The run's events after sequence number `after`, as SSE, until its `end`.
pub(crate) fn tail(
    app: Arc<App>,
    thread_id: String,
    run_id: String,
    after: i64,
    detach: Detach,
    modes: Option<Modes>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let waker = app.hub.run_waker(&run_id);
    let tail = Tail {
        app,
        run_id,
        thread_id,
        after,
        buffer: VecDeque::new(),
        waker,
        done: false,
        detach,
        modes,
    };
    let stream = futures::stream::unfold(tail, |mut tail| async move {
        let row = tail.next().await?;
        let event = Event::default()
            .event(row.event)
            .id(row.seq.to_string())
            .data(row.data.to_string());
        Some((Ok(event), tail))
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}
