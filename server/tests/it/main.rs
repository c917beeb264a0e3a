//! The server's HTTP, Studio, SDK and PostgreSQL tests in one test binary. The
//! multi-process drills keep their own (`drills/`): they start their binary again
//! as the drills' server processes.

#[path = "../common/mod.rs"]
mod common;
#[path = "../pg/mod.rs"]
mod pg;

mod assistants;
mod browser;
mod cancel_drill;
mod clients;
mod crons;
mod hostile;
mod http_api;
mod http_browsers;
mod http_messages;
mod http_options;
mod http_runs;
mod openapi;
mod postgres_processes;
mod postgres_runs;
mod postgres_tls;
mod retention;
mod slow_clients;
mod studio;
mod studio_browser;
mod thread_stream;
mod use_stream;
mod webhooks;
