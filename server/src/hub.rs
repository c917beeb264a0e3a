//! Wake-ups between the parts of a server — and, on PostgreSQL, between server
//! processes (`LISTEN`/`NOTIFY`): a run was queued, a run has new events, a run
//! ended, a client asked to cancel a run.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::{Notify, broadcast};

/// One wake-up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Notice {
    /// A run was queued: idle workers look for work.
    Queued,
    /// A run has new events.
    Events(String),
    /// A run ended.
    Ended(String),
    /// A client asked to stop a run.
    Cancel(String),
}

// The text form is what PostgreSQL's NOTIFY carries between processes.
impl Notice {
    /// The text form carried by `NOTIFY`.
    pub(crate) fn encode(&self) -> String {
        match self {
            Notice::Queued => "q".to_string(),
            Notice::Events(run) => format!("e:{run}"),
            Notice::Ended(run) => format!("x:{run}"),
            Notice::Cancel(run) => format!("c:{run}"),
        }
    }

    /// Reads [`Notice::encode`]'s form.
    pub(crate) fn decode(text: &str) -> Option<Self> {
        if text == "q" {
            return Some(Notice::Queued);
        }
        let (kind, run) = text.split_once(':')?;
        let run = run.to_string();
        Some(match kind {
            "e" => Notice::Events(run),
            "x" => Notice::Ended(run),
            "c" => Notice::Cancel(run),
            _ => return None,
        })
    }

    /// The run it is about, if any.
    pub(crate) fn run(&self) -> Option<&str> {
        match self {
            Notice::Queued => None,
            Notice::Events(r) | Notice::Ended(r) | Notice::Cancel(r) => Some(r),
        }
    }
}

/// The in-process side. Notices about one run (new events, its end, a cancel) wake
/// only the tasks waiting on that run; work notices (`Queued`, `Cancel`) go to every
/// worker through a broadcast (a lagging worker looks at the tables, which are the
/// truth: notices only say when to look).
#[derive(Clone)]
pub(crate) struct Hub {
    tx: broadcast::Sender<Notice>,
    runs: Arc<Mutex<HashMap<String, Weak<Notify>>>>,
}

impl Hub {
    pub(crate) fn new() -> Self {
        let (tx, _) = broadcast::channel(4096);
        Self {
            tx,
            runs: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// Delivers `notice` in this process.
    pub(crate) fn local(&self, notice: Notice) {
        if let Some(run) = notice.run() {
            self.wake(run);
        }
        if matches!(notice, Notice::Queued | Notice::Cancel(_)) {
            let _ = self.tx.send(notice);
        }
    }

    fn wake(&self, run: &str) {
        let waker = self
            .runs
            .lock()
            .ok()
            .and_then(|runs| runs.get(run).and_then(Weak::upgrade));
        if let Some(w) = waker {
            w.notify_waiters();
        }
    }

    /// What wakes the waiters on `run`: enable a `notified()` future before looking
    /// at the tables, then wait on it.
    pub(crate) fn run_waker(&self, run: &str) -> Arc<Notify> {
        let Ok(mut runs) = self.runs.lock() else {
            return Arc::new(Notify::new());
        };
        if let Some(w) = runs.get(run).and_then(Weak::upgrade) {
            return w;
        }
        if runs.len() >= 1024 {
            runs.retain(|_, w| w.strong_count() > 0);
        }
        let w = Arc::new(Notify::new());
        runs.insert(run.to_string(), Arc::downgrade(&w));
        w
    }

    /// The workers' subscription: `Queued` and `Cancel` notices.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Notice> {
        self.tx.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::{Hub, Notice};

    #[tokio::test]
    async fn a_run_notice_wakes_that_runs_waiters_only() {
        let hub = Hub::new();
        let (a, b) = (hub.run_waker("a"), hub.run_waker("b"));
        let wait_a = a.notified();
        let wait_b = b.notified();
        tokio::pin!(wait_a, wait_b);
        wait_a.as_mut().enable();
        wait_b.as_mut().enable();
        hub.local(Notice::Events("a".into()));
        assert!(futures::poll!(wait_a.as_mut()).is_ready());
        assert!(futures::poll!(wait_b.as_mut()).is_pending());
        let mut workers = hub.subscribe();
        hub.local(Notice::Events("b".into()));
        hub.local(Notice::Cancel("b".into()));
        assert!(futures::poll!(wait_b.as_mut()).is_ready());
        assert_eq!(
            workers.try_recv().ok(),
            Some(Notice::Cancel("b".into())),
            "workers hear cancels, not events"
        );
    }

    #[test]
    fn notices_round_trip_through_their_text_form() {
        for n in [
            Notice::Queued,
            Notice::Events("r1".into()),
            Notice::Ended("r:2".into()),
            Notice::Cancel("r3".into()),
        ] {
            assert_eq!(Notice::decode(&n.encode()), Some(n));
        }
        assert_eq!(Notice::decode("z:1"), None);
    }
}
