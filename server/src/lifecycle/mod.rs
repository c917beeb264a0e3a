//! A run's life after it was queued, as the routes need it: wait for its end, ask it
//! to stop, follow its events (`tail`), delete a stateless run's thread after it.

mod run;
mod tail;

pub(crate) use run::{cancel_run, delete_after, wait_for};
pub(crate) use tail::{Detach, tail};
