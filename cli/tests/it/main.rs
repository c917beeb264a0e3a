//! The inspector's tests in one test binary.

mod common;

mod delete;
mod errors;
mod inspect;
mod namespaces;
#[cfg(feature = "postgres")]
mod postgres;
mod prune;
mod row_fuzz;
mod snapshots;
mod store;
mod studio;
