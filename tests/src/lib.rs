//! Shared test support: the saver conformance suite, the database servers tests use,
//! and the worker graphs and crash drill of the crash and concurrency tests.

pub mod conformance;
pub mod crash;
pub mod servers;
pub mod workloads;
