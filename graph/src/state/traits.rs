//! The traits the derive implements: [`GraphState`] for the state struct and
//! [`StateUpdate`] for its generated partial update, with what hangs on them: a
//! task's [`Write`] and the typed accessors of a [`ChannelKey`].

use std::fmt;
use std::sync::Arc;

use super::channel::{ChannelInfo, ChannelKey};
use super::codec::CodecError;
use super::write::{ChangeSet, InvalidUpdate};

/// A workflow's state: a struct whose fields are channels.
///
/// Implement it with `#[derive(GraphState)]`; see the [crate docs](crate) for the
/// attributes. The methods taking a channel `index` are the low-level surface the
/// runtime and checkpoint layer use; application code names channels through the
/// generated [`ChannelKey`] constants instead.
pub trait GraphState: Clone + Default + Send + Sync + 'static {
    /// The generated partial update (`<Name>Update`): one optional write per channel.
    type Update: StateUpdate;

    /// Every channel, in field order.
    const CHANNELS: &'static [ChannelInfo];

    /// SHA-256 (lowercase hex) of [`GraphState::SCHEMA_MANIFEST`]. Stored with every
    /// checkpoint; a checkpoint of another version does not load without a migration.
    const SCHEMA_VERSION: &'static str;

    /// The canonical text the schema version hashes (see the crate docs for the format).
    const SCHEMA_MANIFEST: &'static str;

    /// Applies one superstep's writes, in the given order, through each channel's
    /// reducer, and reports which channels changed and how.
    ///
    /// All-or-nothing: on error the state is left exactly as it was.
    ///
    /// # Errors
    /// [`InvalidUpdate`] when a last-value channel gets more than one write, a channel
    /// gets more than one overwrite, or a reducer rejects its writes.
    fn apply_writes(&mut self, writes: Vec<Write<Self>>) -> Result<ChangeSet, InvalidUpdate>;

    /// Encodes the channel at `index` as JSON; `None` for an untracked channel.
    ///
    /// # Errors
    /// [`CodecError`] when `index` is out of range or the value fails to serialize.
    fn encode_channel(&self, index: usize) -> Result<Option<serde_json::Value>, CodecError>;

    /// Replaces the channel at `index` with a decoded value.
    ///
    /// # Errors
    /// [`CodecError`] when the JSON does not decode into the channel's type, the
    /// channel is untracked, or `index` is out of range. The state is unchanged then.
    fn decode_channel(&mut self, index: usize, value: serde_json::Value) -> Result<(), CodecError>;

    /// For a delta channel (`append`, `messages`): its length, else `None`.
    fn channel_len(&self, index: usize) -> Option<usize>;

    /// For a delta channel: the items from position `from` on, as a JSON array.
    ///
    /// # Errors
    /// [`CodecError`] when the channel has no delta encoding or fails to serialize.
    fn encode_channel_since(
        &self,
        index: usize,
        from: usize,
    ) -> Result<serde_json::Value, CodecError>;

    /// For a delta channel: appends the items of a JSON array produced by
    /// [`GraphState::encode_channel_since`].
    ///
    /// # Errors
    /// [`CodecError`] when the channel has no delta encoding or the JSON does not
    /// decode. The state is unchanged then.
    fn extend_channel(&mut self, index: usize, delta: serde_json::Value) -> Result<(), CodecError>;

    /// Encodes a partial update as a JSON object (untracked channels are left out).
    ///
    /// # Errors
    /// [`CodecError`] when a value fails to serialize.
    fn encode_update(update: &Self::Update) -> Result<serde_json::Value, CodecError>;

    /// Decodes a partial update produced by [`GraphState::encode_update`].
    ///
    /// # Errors
    /// [`CodecError`] naming the channel when the JSON is malformed, names an unknown
    /// channel or does not decode into the channel's update type.
    fn decode_update(value: serde_json::Value) -> Result<Self::Update, CodecError>;
}

/// The generated partial-update type of a state.
pub trait StateUpdate: Clone + std::fmt::Debug + Default + Send + Sync + 'static {
    /// Whether no channel is written.
    fn is_empty(&self) -> bool;

    /// Whether the channel at `index` is written.
    fn writes_channel(&self, index: usize) -> bool;
}

/// One task's contribution to a superstep: who wrote it and what.
pub struct Write<S: GraphState> {
    /// The writer's name (a node name), used in error messages.
    pub writer: Arc<str>,
    /// The partial update.
    pub update: S::Update,
}

impl<S: GraphState> Write<S> {
    /// A write of `update` by `writer`.
    pub fn new(writer: impl Into<Arc<str>>, update: S::Update) -> Self {
        Self {
            writer: writer.into(),
            update,
        }
    }
}

impl<S: GraphState> Clone for Write<S> {
    fn clone(&self) -> Self {
        Self {
            writer: self.writer.clone(),
            update: self.update.clone(),
        }
    }
}

impl<S: GraphState> std::fmt::Debug for Write<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Write")
            .field("writer", &self.writer)
            .field("update", &self.update)
            .finish()
    }
}

impl<S: GraphState, T> ChannelKey<S, T> {
    /// The channel's metadata.
    pub fn info(self) -> &'static ChannelInfo {
        &S::CHANNELS[self.index()]
    }

    /// The channel's name (its field name).
    pub fn name(self) -> &'static str {
        self.info().name
    }
}

impl<S: GraphState, T> fmt::Debug for ChannelKey<S, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ChannelKey({})", self.name())
    }
}
