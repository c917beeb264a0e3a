#![doc = include_str!("docs.md")]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]
#![cfg_attr(not(test), deny(clippy::too_many_lines))]

mod app;
mod astream;
mod builder;
mod cors;
mod db;
mod error;
mod events;
mod hub;
mod lifecycle;
mod listen;
mod messages;
mod rate;
mod retention;
mod rollback;
mod routes;
mod served;
mod webhook;
mod wire;
mod worker;

pub use builder::{Running, Server};
pub use cors::Cors;
pub use db::DbError;
pub use error::{ApiError, ServerError};
pub use retention::{ThreadTtl, TtlStrategy};
pub use webhook::Webhooks;
