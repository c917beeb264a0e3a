//! Webhooks: when a run with a `webhook` ends, its end is POSTed to that URL.
//!
//! The call is queued in the transaction that ends the run (the outbox), so a crash
//! between the two loses nothing; every process with workers delivers what is due,
//! retrying failed calls with backoff, so each call is made at least once — every
//! attempt with the same `Idempotency-Key`, for the receiver to keep one. With a
//! secret, each call is signed (`X-Stategraph-Signature`). A URL whose host is, or
//! resolves to, a loopback, private, link-local or otherwise internal address is
//! refused when the run is created and again on every connection and redirect,
//! unless its host is allowed ([`Webhooks::allow`]).

mod config;
mod deliver;
mod guard;
mod send;

pub use config::Webhooks;
pub(crate) use deliver::deliver_webhooks;
pub(crate) use guard::check_url;
pub(crate) use send::{Sender, delivery_of};
