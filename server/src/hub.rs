//! Wake-ups between the parts of a server — and, on PostgreSQL, between server
//! processes (`LISTEN`/`NOTIFY`): a run was queued, a run has new events, a run
//! ended, a client asked to cancel a run.

use tokio::sync::broadcast;

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
#[cfg_attr(not(test), allow(dead_code))]
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

/// The in-process side: every subscriber sees every notice (a lagging one re-reads
/// the tables, which are the truth; notices only say when to look).
#[derive(Clone)]
pub(crate) struct Hub {
    tx: broadcast::Sender<Notice>,
}

impl Hub {
    pub(crate) fn new() -> Self {
        let (tx, _) = broadcast::channel(4096);
        Self { tx }
    }

    /// Delivers `notice` to this process's subscribers.
    pub(crate) fn local(&self, notice: Notice) {
        let _ = self.tx.send(notice);
    }

    /// A new subscription.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Notice> {
        self.tx.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::Notice;

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
