//! Serve stategraph graphs over the Agent Protocol / LangGraph Platform API.

mod app;
mod builder;
mod db;
mod error;
mod events;
mod hub;
mod routes;
mod served;
mod wire;
mod worker;

pub use builder::{Running, Server};
pub use db::DbError;
pub use error::{ApiError, ServerError};
