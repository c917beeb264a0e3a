//! Nodes: what `#[node]` turns a function into, what a node may return, and the
//! values (`Command`, `Send`, `Route`) that steer the graph.
//!
//! From the bottom up: `naming` (the traits that name a node), `send` and
//! `output` (what a run produces), `interrupt`, `answer` and `context` (what a
//! node receives), `def` (node values and their erased runners) and `control`
//! (`Command`, `Route`).

pub(crate) mod answer;
mod context;
mod control;
pub(crate) mod def;
mod error;
mod handoff;
mod interrupt;
mod naming;
mod output;
mod payload;
mod send;

pub use crate::future::BoxFuture;
pub(crate) use context::Provided;
pub use context::{ContextError, NodeContext};
pub use control::{Command, IntoGoto, Resume, Route};
pub(crate) use def::{AsyncRunner, Runner, SyncRunner, TaskInput};
pub use def::{Node, NodeDef, NodeHandle, SubgraphHandle};
pub use error::NodeError;
pub use handoff::Handoff;
pub use interrupt::Interrupt;
pub(crate) use interrupt::interrupt_id;
pub use naming::{NamedNode, NodeRef};
pub use output::{END, End, Goto, NodeOutput, NodeResult, NodeReturn, START, Start, update_output};
pub use payload::{OpaquePayload, PayloadCodec, PayloadProbe, SerdePayload};
pub use send::{IntoPayload, Send};
