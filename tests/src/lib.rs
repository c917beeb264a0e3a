//! Shared test support: the saver conformance suite.

pub mod conformance;
pub mod servers;
