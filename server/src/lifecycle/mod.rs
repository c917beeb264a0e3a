//! A run's life after it was queued, as the routes need it: wait for its end, ask it
//! to stop, follow its events (`tail`), delete a stateless run's thread after it;
//! and a whole thread's runs and state updates as one stream (`follow_thread`).

mod run;
mod tail;
mod thread;

pub(crate) use run::{cancel_run, delete_after, wait_for};
pub(crate) use tail::{Detach, tail};
pub(crate) use thread::{follow_thread, publish_state_update};
