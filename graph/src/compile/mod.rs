//! Turning a declared `StateGraph` into a runnable `CompiledGraph`: every problem is
//! collected into one `BuildError`, and the topology is indexed for the superstep loop.
//!
//! `build` checks a [`StateGraph`](crate::StateGraph) (the only file that reads the
//! builder), `graph` holds the compiled form the runtime walks, `options` and
//! `error` what goes in and what comes out.

mod build;
mod error;
mod graph;
mod options;

pub use error::{BuildError, BuildProblem};
pub use graph::CompiledGraph;
pub(crate) use graph::{Branch, CompiledNode, Graph};
pub use options::{CompileOptions, Migration};
