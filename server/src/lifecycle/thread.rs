//! A thread's runs, one after another as they come, and its state updates, as one
//! server-sent event stream that stays open — what a UI watching a thread (not one
//! run) reads (`GET /threads/{id}/stream`). Resumable: every event's id is the whole
//! position in the thread (`run.seq.updates.done`), so a client that reconnects with
//! `Last-Event-ID` misses nothing and sees nothing twice.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::app::App;
use crate::db::{EventRow, RunRow, thread_events_key};
use crate::error::ApiError;

/// How long a quiet stream waits before looking at the tables itself.
const RECHECK: Duration = Duration::from_secs(1);
/// Events read per query.
const PAGE: usize = 256;
/// Runs of a thread looked at when finding the next one.
const RUNS: usize = 1000;

/// What a thread stream carries (`stream_mode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Modes {
    /// Every event of every run, in the modes each run was created with.
    runs: bool,
    /// A run's start (`metadata` with `run_id` and `attempt`) and end (`metadata`
    /// with `status: "run_done"`).
    lifecycle: bool,
    /// `state_update` after each `POST /threads/{id}/state`.
    state_updates: bool,
}

impl Modes {
    /// `stream_mode` (or `stream_modes`), once per mode or comma-separated; `run_modes`
    /// when absent, as LangGraph Platform does.
    fn parse(query: Option<&str>) -> Result<Self, ApiError> {
        let mut modes = Modes::default();
        let mut any = false;
        for (key, value) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
            if key != "stream_mode" && key != "stream_modes" {
                continue;
            }
            for mode in value.split(',').map(str::trim).filter(|m| !m.is_empty()) {
                any = true;
                match mode {
                    "run_modes" => modes.runs = true,
                    "lifecycle" => modes.lifecycle = true,
                    "state_update" => modes.state_updates = true,
                    other => {
                        return Err(ApiError::invalid(
                            "query.stream_mode",
                            format!(
                                "unknown thread stream mode `{other}`: use run_modes, lifecycle or state_update"
                            ),
                        ));
                    }
                }
            }
        }
        if !any {
            modes.runs = true;
        }
        Ok(modes)
    }

    fn wants_run_event(self, row: &EventRow) -> bool {
        self.runs || (self.lifecycle && row.event == "metadata" && is_run_start(&row.data))
    }
}

/// The `metadata` event that ends a run in a thread stream.
#[derive(Serialize)]
struct RunDone<'a> {
    status: &'static str,
    run_id: &'a str,
}

/// A `state_update` event's data.
#[derive(Serialize)]
struct StateUpdate<'a> {
    state: &'a Value,
    thread_id: &'a str,
}

/// A state update as stored: with the run that came last before it, which places
/// it among the runs' events.
#[derive(Serialize, Deserialize)]
struct StoredUpdate {
    state: Value,
    after_run: Option<String>,
}

fn is_run_start(data: &Value) -> bool {
    data.get("run_id").is_some() && data.get("attempt").is_some()
}

/// Where a thread stream is: the run it reads (and how far), whether that run's
/// end was delivered, and how many state updates were.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Cursor {
    run: Option<String>,
    seq: i64,
    done: bool,
    updates: i64,
}

impl Cursor {
    fn id(&self) -> String {
        format!(
            "{}.{}.{}.{}",
            self.run.as_deref().unwrap_or("-"),
            self.seq,
            self.updates,
            u8::from(self.done)
        )
    }

    fn parse(id: &str) -> Option<Self> {
        let mut parts = id.split('.');
        let run = parts.next()?;
        let seq = parts.next()?.parse().ok()?;
        let updates = parts.next()?.parse().ok()?;
        let done = match parts.next()? {
            "0" => false,
            "1" => true,
            _ => return None,
        };
        if parts.next().is_some() || run.is_empty() || seq < 0 || updates < 0 {
            return None;
        }
        Some(Cursor {
            run: (run != "-").then(|| run.to_string()),
            seq,
            done,
            updates,
        })
    }
}

struct ThreadTail {
    app: Arc<App>,
    thread_id: String,
    key: String,
    modes: Modes,
    at: Cursor,
    buffer: VecDeque<(String, Value, String)>,
}

impl ThreadTail {
    fn push(&mut self, event: &str, data: Value) {
        self.buffer
            .push_back((event.to_string(), data, self.at.id()));
    }

    /// Reads what is new, in the thread's order: the current run's events; once it
    /// ended, the state updates made then; then the next run. Whether anything was.
    async fn read(&mut self) -> Result<bool, ApiError> {
        if let Some(run) = self.at.run.clone().filter(|_| !self.at.done) {
            let rows = self
                .app
                .db
                .events_after(run.clone(), self.at.seq, PAGE)
                .await?;
            let moved = !rows.is_empty();
            for row in rows {
                self.at.seq = row.seq;
                if row.event == "end" {
                    self.run_done(&run);
                } else if self.modes.wants_run_event(&row) {
                    self.push(&row.event, row.data);
                }
            }
            return Ok(moved);
        }
        if self.due_updates().await? {
            return Ok(true);
        }
        self.next_run().await
    }

    /// Delivers the state updates made where the stream is now (each names the run
    /// that came last before it); whether there were any.
    async fn due_updates(&mut self) -> Result<bool, ApiError> {
        let rows = self
            .app
            .db
            .events_after(self.key.clone(), self.at.updates, PAGE)
            .await?;
        let mut moved = false;
        for row in rows {
            let stored: StoredUpdate = match serde_json::from_value(row.data) {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(error = %e, "skipping an unreadable state update event");
                    self.at.updates = row.seq;
                    continue;
                }
            };
            if !self.reached(stored.after_run.as_deref()).await? {
                break;
            }
            self.at.updates = row.seq;
            moved = true;
            if self.modes.state_updates {
                let data = serde_json::to_value(StateUpdate {
                    state: &stored.state,
                    thread_id: &self.thread_id,
                })
                .unwrap_or_default();
                self.push(&row.event, data);
            }
        }
        Ok(moved)
    }

    /// Whether the stream has passed the end of run `after` (no run: the start).
    async fn reached(&self, after: Option<&str>) -> Result<bool, ApiError> {
        let current = self.at.run.as_deref();
        if after == current {
            return Ok(current.is_none() || self.at.done);
        }
        let Some(after) = after else {
            return Ok(true);
        };
        // Rare: a run deleted since, or an update the stream is already beyond.
        let runs = oldest_first(&self.app, &self.thread_id).await?;
        let at = |id: Option<&str>| id.and_then(|id| runs.iter().position(|r| r.run_id == id));
        Ok(match (at(Some(after)), at(current)) {
            (None, _) => true,
            (Some(a), Some(c)) => a < c,
            (Some(_), None) => false,
        })
    }

    fn run_done(&mut self, run: &str) {
        self.at.done = true;
        if self.modes.runs || self.modes.lifecycle {
            let done = RunDone {
                status: "run_done",
                run_id: run,
            };
            self.push("metadata", serde_json::to_value(done).unwrap_or_default());
        }
    }

    /// Moves to the thread's next run after the current one, if there is one.
    async fn next_run(&mut self) -> Result<bool, ApiError> {
        let runs = oldest_first(&self.app, &self.thread_id).await?;
        let next = match &self.at.run {
            None => runs.first(),
            Some(current) => runs
                .iter()
                .position(|r| &r.run_id == current)
                .and_then(|i| runs.get(i + 1)),
        };
        let Some(next) = next else { return Ok(false) };
        self.at.run = Some(next.run_id.clone());
        self.at.seq = 0;
        self.at.done = false;
        Ok(true)
    }

    /// After a quiet while: a run that ended without an `end` event (swept, or
    /// deleted) is done; a deleted thread ends the stream.
    async fn recheck(&mut self) -> Result<bool, ApiError> {
        if self
            .app
            .db
            .get_thread(self.thread_id.clone())
            .await?
            .is_none()
        {
            return Ok(false);
        }
        if let Some(run) = self.at.run.clone().filter(|_| !self.at.done) {
            let status = self.app.db.get_run(None, run.clone()).await?;
            if status.is_none_or(|r| r.status.is_final()) && !self.read().await? {
                self.run_done(&run);
            }
        }
        Ok(true)
    }

    async fn next(&mut self) -> Option<(String, Value, String)> {
        loop {
            if let Some(e) = self.buffer.pop_front() {
                return Some(e);
            }
            if *self.app.stopping.borrow() {
                return None;
            }
            // Listen before looking, so an event stored in between still wakes us.
            let thread_waker = self.app.hub.run_waker(&self.key);
            let run_waker = self
                .at
                .run
                .as_deref()
                .map_or_else(|| thread_waker.clone(), |r| self.app.hub.run_waker(r));
            let (on_thread, on_run) = (thread_waker.notified(), run_waker.notified());
            tokio::pin!(on_thread, on_run);
            on_thread.as_mut().enable();
            on_run.as_mut().enable();
            match self.read().await {
                Ok(true) => continue,
                Ok(false) => {}
                Err(e) => tracing::warn!(error = %e.detail, "reading a thread stream failed"),
            }
            let mut stopping = self.app.stopping.clone();
            let woke = tokio::time::timeout(RECHECK, async {
                tokio::select! {
                    () = on_thread => {}
                    () = on_run => {}
                    _ = stopping.changed() => {}
                }
            })
            .await;
            if woke.is_err() {
                match self.recheck().await {
                    Ok(true) => {}
                    Ok(false) => return None,
                    Err(e) => tracing::warn!(error = %e.detail, "reading a thread failed"),
                }
            }
        }
    }
}

/// The thread's runs, oldest first.
async fn oldest_first(app: &App, thread_id: &str) -> Result<Vec<RunRow>, ApiError> {
    let mut runs = app
        .db
        .list_runs(thread_id.to_string(), None, RUNS, 0)
        .await?;
    runs.reverse();
    Ok(runs)
}

/// Where a stream without `Last-Event-ID` starts: now — the rest of an active run,
/// the runs after it, updates after the last one.
async fn live(app: &App, thread_id: &str, key: &str) -> Result<Cursor, ApiError> {
    let updates = app.db.last_event_seq(key.to_string()).await?;
    let runs = oldest_first(app, thread_id).await?;
    let current = runs
        .iter()
        .find(|r| !r.status.is_final())
        .or_else(|| runs.last());
    let Some(run) = current else {
        return Ok(Cursor {
            updates,
            ..Cursor::default()
        });
    };
    let seq = app.db.last_event_seq(run.run_id.clone()).await?;
    Ok(Cursor {
        run: Some(run.run_id.clone()),
        seq,
        done: run.status.is_final(),
        updates,
    })
}

/// The stream of `thread_id` (which exists) in the modes `query` names, from the
/// `Last-Event-ID` header's position (`None`: now; `-1`: everything kept).
pub(crate) async fn follow_thread(
    app: Arc<App>,
    thread_id: String,
    query: Option<&str>,
    last_event_id: Option<Result<&str, ()>>,
) -> Result<Response, ApiError> {
    let modes = Modes::parse(query)?;
    let key = thread_events_key(&thread_id);
    let at = match last_event_id {
        None => live(&app, &thread_id, &key).await?,
        Some(Ok("-1")) => Cursor::default(),
        Some(Ok(text)) => Cursor::parse(text).ok_or_else(|| bad_event_id(text))?,
        Some(Err(())) => return Err(bad_event_id("(not text)")),
    };
    if let Some(run) = &at.run
        && app
            .db
            .get_run(Some(thread_id.clone()), run.clone())
            .await?
            .is_none()
    {
        return Err(bad_event_id(&at.id()));
    }
    let tail = ThreadTail {
        app,
        thread_id,
        key,
        modes,
        at,
        buffer: VecDeque::new(),
    };
    let stream = futures::stream::unfold(tail, |mut tail| async move {
        let (event, data, id) = tail.next().await?;
        let event = Event::default().event(event).id(id).data(data.to_string());
        Some((Ok::<_, Infallible>(event), tail))
    });
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response())
}

fn bad_event_id(text: &str) -> ApiError {
    ApiError::bad_request(format!(
        "Last-Event-ID `{text}` is not an event id of this thread's stream: send the id of the last event received, or -1 for every event"
    ))
}

/// Stores a `state_update` event for the thread's streams and wakes them.
pub(crate) async fn publish_state_update(
    app: &App,
    thread_id: &str,
    state: Value,
) -> Result<(), ApiError> {
    let after_run = app
        .db
        .list_runs(thread_id.to_string(), None, 1, 0)
        .await?
        .pop()
        .map(|r| r.run_id);
    let data = serde_json::to_value(StoredUpdate { state, after_run }).unwrap_or_default();
    let key = thread_events_key(thread_id);
    app.db
        .append_events(key.clone(), vec![("state_update".into(), data)])
        .await?;
    app.notify(crate::hub::Notice::Events(key)).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{Cursor, Modes};

    #[test]
    fn a_cursor_round_trips_through_its_event_id() {
        for c in [
            Cursor::default(),
            Cursor {
                run: Some("1f0e-ab".into()),
                seq: 7,
                done: true,
                updates: 3,
            },
        ] {
            assert_eq!(Cursor::parse(&c.id()), Some(c));
        }
        for bad in [
            "",
            "7",
            "r.1.2",
            "r.1.2.3",
            "r.-1.0.0",
            "r.1.2.0.9",
            "..1.0",
        ] {
            assert_eq!(Cursor::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn modes_come_repeated_or_comma_separated() {
        let m = Modes::parse(Some("stream_mode=lifecycle&stream_mode=state_update")).ok();
        assert_eq!(
            m,
            Some(Modes {
                runs: false,
                lifecycle: true,
                state_updates: true
            })
        );
        let m = Modes::parse(Some("stream_modes=run_modes,state_update")).ok();
        assert!(m.is_some_and(|m| m.runs && m.state_updates && !m.lifecycle));
        assert!(Modes::parse(None).is_ok_and(|m| m.runs && !m.lifecycle));
        assert!(Modes::parse(Some("stream_mode=")).is_ok_and(|m| m.runs && !m.lifecycle));
        assert!(Modes::parse(Some("stream_mode=values")).is_err());
    }
}
