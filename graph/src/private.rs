//! What generated code names. Not public API: no semver guarantees.

pub use serde;
pub use serde_json;

pub use crate::state::{
    Add, Append, ChangeSet, ChannelInfo, ChannelKey, ChannelWrite, Checkpointable, Codec,
    CodecError, DeltaCodec, GraphState, IntoChannelValue, InvalidUpdate, LastValue, Merge,
    MessageOp, Messages, Pending, Persistence, Reducer, StateUpdate, Union, WithReducer, Write,
    append_delta, codec, messages_delta, split_write,
};

/// Asserts at compile time that a `with = path` reducer function has the signature
/// `fn(&mut T, U)`.
pub const fn assert_with_reducer<T, U, F: WithReducer<T, U>>(_: &F) {}

pub use crate::state::{Mergeable, MessageList, Sequence, SetLike};

/// Extends a collection channel's slot with converted items.
pub fn extend_items<T, I, V>(
    slot: &mut Option<ChannelWrite<T, Vec<I>>>,
    items: impl IntoIterator<Item = V>,
) where
    V: IntoChannelValue<I>,
{
    let new = items.into_iter().map(IntoChannelValue::into_channel_value);
    match slot {
        Some(ChannelWrite::Reduce(existing)) => existing.extend(new),
        _ => *slot = Some(ChannelWrite::Reduce(new.collect())),
    }
}

/// Extends a map channel's slot with converted entries.
pub fn extend_entries<T, K, V, K2, V2>(
    slot: &mut Option<ChannelWrite<T, Vec<(K, V)>>>,
    entries: impl IntoIterator<Item = (K2, V2)>,
) where
    K2: IntoChannelValue<K>,
    V2: IntoChannelValue<V>,
{
    extend_items(
        slot,
        entries
            .into_iter()
            .map(|(k, v)| (k.into_channel_value(), v.into_channel_value())),
    );
}

pub use crate::node::{
    BoxFuture, NodeContext, NodeDef, NodeError, NodeFn, NodeResult, NodeReturn, OpaquePayload,
    PayloadCodec, PayloadProbe, SerdePayload, update_output,
};

pub use crate::runtime::RunInput;

/// The second parameter of a node: only `&NodeContext`.
#[diagnostic::on_unimplemented(
    message = "the second parameter of a node must be `&NodeContext`, not `&{Self}`",
    label = "expected `NodeContext` here",
    note = "a node takes `&State` (or `&Payload` for a `Send` target), then optionally `&NodeContext`"
)]
pub trait ContextArg {
    /// The argument passed for the node's context.
    fn from_context(ctx: &NodeContext) -> &Self;
}

impl ContextArg for NodeContext {
    fn from_context(ctx: &NodeContext) -> &Self {
        ctx
    }
}

/// Converts the runtime's context into a node's second argument.
pub fn context_arg<T: ContextArg + ?Sized>(ctx: &NodeContext) -> &T {
    T::from_context(ctx)
}
