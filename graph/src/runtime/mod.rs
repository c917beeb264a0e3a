//! The superstep loop: plan tasks, run them concurrently, apply their writes in the
//! deterministic task order, compute the next frontier from edges, joins, routers,
//! `goto`s and `Send`s — and, with a checkpointer, save each task's writes as it
//! finishes and a checkpoint after each step.

mod algo;
mod caching;
mod child_events;
mod child_state;
mod config;
mod error;
mod events;
mod frontier;
mod input;
mod lease;
mod nested;
mod persist;
mod restore;
mod run;
mod run_loop;
mod runner;
mod save;
mod snapshot;
mod step;
mod update;
mod writer;

pub use config::{Durability, RunConfig, RunInput, RunOutput};
pub use error::{ContinueReason, NodePanic, RunError};
pub use lease::RunLease;
pub(crate) use nested::{ChildEnd, run_child};
pub use snapshot::{StateSnapshot, SubgraphState, TaskSnapshot};
pub use update::UpdateAs;
