//! A run's life after it was queued, as the routes need it: wait for its end, ask it
//! to stop, follow its events (`tail`), delete a stateless run's thread after it;
//! and a whole thread's runs and state updates as one stream (`follow_thread`).
//! Before it: checking a run request (`prepare_run`); crons, which make run
//! requests on a schedule (`schedule_crons`).

mod cron;
mod prepare;
mod run;
mod schedule;
mod tail;
mod thread;

pub(crate) use cron::{cron_of, patch_cron, schedule_crons};
pub(crate) use prepare::prepare_run;
pub(crate) use run::{announce_queued, cancel_run, delete_after, wait_for};
pub(crate) use tail::{Detach, tail};
pub(crate) use thread::{follow_thread, publish_state_update};
