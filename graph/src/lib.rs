#![doc = include_str!("../docs/tutorial.md")]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]
#![cfg_attr(not(test), deny(clippy::too_many_lines))]

// Generated code names `::stategraph::..`; this lets the crate's own unit tests
// use `#[derive(GraphState)]` and `#[node]`.
#[cfg(test)]
extern crate self as stategraph;

pub mod builder;
mod builder_async;
pub mod cache;
pub mod checkpoint;
pub mod compile;
mod future;
mod mermaid;
pub mod node;
pub mod retry;
pub mod runtime;
mod shape;
mod shape_json;
pub mod state;
pub mod store;
pub mod stream;
pub mod subgraph;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;

/// Derives [`GraphState`](trait@GraphState) for a struct with named fields; see the
/// [crate docs](crate) for the attributes it reads.
pub use stategraph_macros::GraphState;
/// Turns a function into a graph node; see the [crate docs](crate).
pub use stategraph_macros::node;

pub use builder::{Endpoint, IntoDeclared, IntoSources, IntoTarget, StateGraph};
pub use compile::{BuildError, BuildProblem, CompileOptions, CompiledGraph, Migration};
pub use node::{
    BoxFuture, Command, ContextError, END, End, Goto, Interrupt, IntoGoto, NamedNode, Node,
    NodeContext, NodeDef, NodeError, NodeHandle, NodeOutput, NodeRef, NodeResult, NodeReturn,
    Resume, Route, START, Start, SubgraphHandle,
};
pub use node::{IntoPayload, Send};
pub use retry::RetryPolicy;
pub use runtime::{
    ContinueReason, Durability, NodePanic, RunConfig, RunError, RunInput, RunLease, RunOutput,
    StateSnapshot, SubgraphState, TaskSnapshot, UpdateAs,
};
pub use shape_json::{GraphShape, ShapeEdge, ShapeNode, ShapeNodeKind};
pub use state::{
    Add, Addable, Append, Change, ChangeSet, ChannelInfo, ChannelKey, ChannelWrite, Checkpointable,
    ChunkError, CodecError, GraphState, InputError, IntoChannelValue, InvalidUpdate, LastValue,
    Merge, Mergeable, Message, MessageBuilder, MessageChunk, MessageLike, MessageList, MessageOp,
    Messages, Persistence, ReduceError, Reducer, RemoveAllMessages, RemoveMessage, Role, Sequence,
    SetLike, StateUpdate, ToolCall, ToolCallChunk, Union, WithReducer, Write, state_to_json,
    update_from_json, update_to_json,
};
pub use stream::{DebugKind, RunStream, StreamEvent, StreamMode};
pub use subgraph::{Subgraph, SubgraphCheckpoints, SubgraphError};

/// The names most programs need: `use stategraph::prelude::*;`.
///
/// `Send` is left out on purpose: a glob import of it would shadow the
/// `std::marker::Send` trait. Write `stategraph::Send::new(..)`.
pub mod prelude {
    pub use crate::builder::StateGraph;
    pub use crate::checkpoint::InMemorySaver;
    pub use crate::compile::CompileOptions;
    pub use crate::compile::CompiledGraph;
    pub use crate::node::{Command, END, Interrupt, NodeContext, NodeError, Route, START};
    pub use crate::retry::RetryPolicy;
    pub use crate::runtime::{Durability, RunConfig, RunError, RunOutput};
    pub use crate::state::{
        ChangeSet, ChannelKey, GraphState, Message, MessageLike, RemoveAllMessages, RemoveMessage,
        Role, StateUpdate, ToolCall, Write,
    };
    pub use crate::stream::{StreamEvent, StreamMode};
    pub use crate::subgraph::{Subgraph, SubgraphCheckpoints};
    pub use stategraph_macros::{GraphState, node};
}

/// The README's code, compiled as a doc-test so it cannot drift.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;

/// The store guide's code, compiled as a doc-test so it cannot drift.
#[cfg(doctest)]
#[doc = include_str!("../../docs/store.md")]
pub struct StoreGuideDoctests;
