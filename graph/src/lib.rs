#![doc = include_str!("../docs/tutorial.md")]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod state;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;

/// Derives [`GraphState`](trait@GraphState) for a struct with named fields; see the
/// [crate docs](crate) for the attributes it reads.
pub use stategraph_macros::GraphState;

pub use state::{
    Add, Addable, Append, Change, ChangeSet, ChannelInfo, ChannelKey, ChannelWrite, Checkpointable,
    CodecError, GraphState, IntoChannelValue, InvalidUpdate, LastValue, Merge, Mergeable, Message,
    MessageLike, MessageList, MessageOp, Messages, Persistence, ReduceError, Reducer,
    RemoveAllMessages, RemoveMessage, Role, Sequence, SetLike, StateUpdate, ToolCall, Union,
    WithReducer, Write,
};

/// The names most programs need: `use stategraph::prelude::*;`.
pub mod prelude {
    pub use crate::state::{
        ChangeSet, ChannelKey, GraphState, Message, MessageLike, RemoveAllMessages, RemoveMessage,
        Role, StateUpdate, ToolCall, Write,
    };
    pub use stategraph_macros::GraphState;
}

/// The README's code, compiled as a doc-test so it cannot drift.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
