//! What generated code names. Not public API: no semver guarantees.

pub use serde;
pub use serde_json;

pub use crate::state::{
    Add, Append, ChangeSet, ChannelInfo, ChannelKey, ChannelWrite, Checkpointable, Codec,
    CodecError, DeltaCodec, GraphState, IntoChannelValue, InvalidUpdate, LastValue, Merge,
    MessageOp, Messages, Pending, Persistence, Reducer, StateUpdate, Union, WithReducer, Write,
    append_delta, codec, messages_delta, split_write,
};

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
pub fn extend_entries<T, K, V, E>(
    slot: &mut Option<ChannelWrite<T, Vec<(K, V)>>>,
    entries: impl IntoIterator<Item = E>,
) where
    E: IntoEntry<K, V>,
{
    extend_items(slot, entries.into_iter().map(IntoEntry::into_entry));
}

/// One item of a `merge` channel's builder: a `(key, value)` pair.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a `(key, value)` entry of a `merge` channel of `{K}` keys and `{V}` values",
    label = "expected `({K}, {V})` entries",
    note = "a `merge` channel's builder takes `(key, value)` pairs: `.scores([(\"a\", 1.0)])`"
)]
pub trait IntoEntry<K, V> {
    /// The converted pair.
    fn into_entry(self) -> (K, V);
}

impl<K, V, K2: IntoChannelValue<K>, V2: IntoChannelValue<V>> IntoEntry<K, V> for (K2, V2) {
    fn into_entry(self) -> (K, V) {
        (self.0.into_channel_value(), self.1.into_channel_value())
    }
}

pub use crate::node::def::NodeFn;
pub use crate::node::{
    BoxFuture, NodeContext, NodeDef, NodeError, NodeResult, NodeReturn, OpaquePayload,
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

/// `Clone` on a state, asked through this trait so a missing derive is one error in
/// our words; the generated impls are bounded on it and report nothing more. The
/// state is a parameter (not `Self`) so rustc does not suggest borrowing it instead.
#[diagnostic::on_unimplemented(
    message = "the state `{S}` does not implement `Clone`",
    label = "add `#[derive(Clone)]` to `{S}`",
    note = "a `#[derive(GraphState)]` state also derives `Clone` and `Default`"
)]
pub trait StateClone<S> {}

#[diagnostic::do_not_recommend]
impl<S: Clone> StateClone<S> for () {}

/// `Default` on a state; see [`StateClone`].
#[diagnostic::on_unimplemented(
    message = "the state `{S}` does not implement `Default`",
    label = "add `#[derive(Default)]` to `{S}`",
    note = "a `#[derive(GraphState)]` state also derives `Clone` and `Default`"
)]
pub trait StateDefault<S> {}

#[diagnostic::do_not_recommend]
impl<S: Default> StateDefault<S> for () {}

/// The one check of `GraphState`'s supertraits, spanned at the state's name.
pub const fn assert_state<S: Send + Sync + 'static>()
where
    (): StateClone<S> + StateDefault<S>,
{
}

/// A built-in reducer on a field whose type the derive cannot see through (an alias,
/// a user type): the generated impls are bounded on it, so when it does not hold
/// only [`Fits`] (a field of the generated check) reports it, at the field's type.
pub trait ChannelReducer<T>:
    Reducer<T, Update: Clone + std::fmt::Debug + Send + Sync + 'static>
{
}

impl<T, M> ChannelReducer<T> for M where
    M: Reducer<T, Update: Clone + std::fmt::Debug + Send + Sync + 'static>
{
}

/// [`ChannelReducer`] on a checkpointed field: the codec of its update type. A const,
/// not an `Update: Checkpointable` bound, so the bound does not elaborate into serde
/// bounds that compete with serde's impls in the generated where-clauses.
pub trait StoredReducer<T>: Reducer<T> {
    /// The codec of the field's value.
    const CODEC: Codec<T>;
    /// The codec of one write's update.
    const UCODEC: Codec<Self::Update>;
}

impl<T, M> StoredReducer<T> for M
where
    T: Checkpointable,
    M: Reducer<T, Update: Checkpointable>,
{
    const CODEC: Codec<T> = codec::<T>();
    const UCODEC: Codec<Self::Update> = codec::<Self::Update>();
}

/// A delta reducer (`append`, `messages`) on a checkpointed field: its delta codec.
pub trait DeltaReducer<T> {
    /// The codec of the items a checkpoint stores.
    const DELTA: DeltaCodec<T>;
}

impl<T: Sequence + 'static> DeltaReducer<T> for Append
where
    T::Item: Checkpointable,
{
    const DELTA: DeltaCodec<T> = append_delta::<T>();
}

impl<T: MessageList + 'static> DeltaReducer<T> for Messages
where
    T::Message: Checkpointable,
{
    const DELTA: DeltaCodec<T> = messages_delta::<T>();
}

/// The one check of an untracked [`ChannelReducer`] field: a field of this type,
/// spanned at the field's type.
pub struct Fits<M: ChannelReducer<T>, T>(std::marker::PhantomData<(M, T)>);

/// [`Fits`] for a checkpointed field.
pub struct FitsStored<M: ChannelReducer<T> + StoredReducer<T>, T>(std::marker::PhantomData<(M, T)>);

/// [`Fits`] for a checkpointed field of a delta reducer.
pub struct FitsDelta<M: ChannelReducer<T> + StoredReducer<T> + DeltaReducer<T>, T>(
    std::marker::PhantomData<(M, T)>,
);
