//! Runnable examples live in `examples/`; the main demo's pipeline lives here, in
//! [`research`], so that its binary and its tests share one definition.

pub mod agent;
pub mod research;
