//! Shared test support: the saver conformance suite, the database servers tests use,
//! the worker graphs and crash drill of the crash and concurrency tests, and the graph
//! of the durable node-cache tests, and golden-file comparison.

pub mod cached_page;
pub mod conformance;
pub mod crash;
pub mod crash_nested;
pub mod golden;
pub mod intercept;
pub mod nested;
pub mod rows;
pub mod servers;
pub mod store_conformance;
pub mod store_reference;
pub mod store_writers;
pub mod workloads;
