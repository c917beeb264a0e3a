//! Per-channel JSON codecs. Values decode into their Rust types, so loading a
//! checkpoint never runs user code beyond `Deserialize`.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::channel::ChannelInfo;
use super::reducer::{MessageList, Sequence};

/// Types that can be stored in a checkpoint: `Serialize + DeserializeOwned`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be stored in a checkpoint",
    label = "this channel's type must implement `serde::Serialize` and `serde::Deserialize`",
    note = "derive `Serialize` and `Deserialize` for it, or mark the field `#[channel(untracked)]` to keep it out of checkpoints"
)]
pub trait Checkpointable: Serialize + DeserializeOwned {}

// Not recommended: a missing impl is reported as `Checkpointable` itself (our message,
// once) rather than as serde's two bounds with their lists of implementing types.
#[diagnostic::do_not_recommend]
impl<T: Serialize + DeserializeOwned> Checkpointable for T {}

/// A channel value or update failed to encode or decode.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CodecError {
    /// Serializing a value failed.
    #[error("cannot encode channel `{channel}`: {source}")]
    Encode {
        /// The channel.
        channel: &'static str,
        /// What serde reported.
        #[source]
        source: serde_json::Error,
    },
    /// Stored JSON does not decode into the channel's type.
    #[error("stored value of channel `{channel}` does not decode as `{type_name}`: {source}")]
    Decode {
        /// The channel.
        channel: &'static str,
        /// The channel's Rust type.
        type_name: &'static str,
        /// What serde reported.
        #[source]
        source: serde_json::Error,
    },
    /// The channel is `#[channel(untracked)]` and has no codec.
    #[error("channel `{channel}` is untracked (`#[channel(untracked)]`) and cannot be decoded")]
    Untracked {
        /// The channel.
        channel: &'static str,
    },
    /// A delta was asked of a channel that stores whole values.
    #[error(
        "channel `{channel}` has no delta encoding; only `append` and `messages` channels store deltas"
    )]
    NoDelta {
        /// The channel.
        channel: &'static str,
    },
    /// A channel index past the end of the state.
    #[error("no channel at index {index}: the state has {count} channels")]
    UnknownChannel {
        /// The index asked for.
        index: usize,
        /// How many channels the state has.
        count: usize,
    },
    /// A stored update names a channel the state does not have.
    #[error("stored update writes unknown channel `{name}`; the state's schema has changed")]
    UnknownUpdateChannel {
        /// The name found in the stored update.
        name: String,
    },
    /// A stored update is not shaped as `encode_update` writes it.
    #[error(
        "stored update for channel `{channel}` is malformed: expected {{\"reduce\": ..}} or {{\"overwrite\": ..}}"
    )]
    MalformedWrite {
        /// The channel.
        channel: &'static str,
    },
    /// A stored update is not a JSON object.
    #[error("stored update is not a JSON object")]
    UpdateNotObject,
}

/// Encoder and decoder of one checkpointed channel type. Built once per channel by
/// generated code so the `Checkpointable` bound is checked at one place.
#[doc(hidden)]
pub struct Codec<T> {
    encode: fn(&T) -> Result<Value, serde_json::Error>,
    decode: fn(Value) -> Result<T, serde_json::Error>,
}

fn encode_value<T: Serialize>(value: &T) -> Result<Value, serde_json::Error> {
    serde_json::to_value(value)
}

fn decode_value<T: DeserializeOwned>(value: Value) -> Result<T, serde_json::Error> {
    serde_json::from_value(value)
}

#[doc(hidden)]
pub const fn codec<T: Checkpointable>() -> Codec<T> {
    Codec {
        encode: encode_value::<T>,
        decode: decode_value::<T>,
    }
}

impl<T> Codec<T> {
    pub fn encode(&self, value: &T, channel: &ChannelInfo) -> Result<Value, CodecError> {
        (self.encode)(value).map_err(|source| CodecError::Encode {
            channel: channel.name,
            source,
        })
    }

    pub fn decode(&self, value: Value, channel: &ChannelInfo) -> Result<T, CodecError> {
        (self.decode)(value).map_err(|source| CodecError::Decode {
            channel: channel.name,
            type_name: channel.type_name,
            source,
        })
    }
}

/// Delta encoder of a list channel: the items appended since a position.
#[doc(hidden)]
pub struct DeltaCodec<T> {
    len: fn(&T) -> usize,
    encode_since: fn(&T, usize) -> Result<Value, serde_json::Error>,
    extend: fn(&mut T, Value) -> Result<(), serde_json::Error>,
}

fn seq_len<T: Sequence>(value: &T) -> usize {
    value.len()
}

fn seq_encode_since<T: Sequence>(value: &T, from: usize) -> Result<Value, serde_json::Error>
where
    T::Item: Serialize,
{
    serde_json::to_value(value.items_from(from).collect::<Vec<_>>())
}

fn seq_extend<T: Sequence>(value: &mut T, delta: Value) -> Result<(), serde_json::Error>
where
    T::Item: DeserializeOwned,
{
    let items: Vec<T::Item> = serde_json::from_value(delta)?;
    value.extend_items(items);
    Ok(())
}

#[doc(hidden)]
pub const fn append_delta<T: Sequence>() -> DeltaCodec<T>
where
    T::Item: Checkpointable,
{
    DeltaCodec {
        len: seq_len::<T>,
        encode_since: seq_encode_since::<T>,
        extend: seq_extend::<T>,
    }
}

#[doc(hidden)]
pub const fn messages_delta<T: MessageList>() -> DeltaCodec<T>
where
    T::Message: Checkpointable,
{
    DeltaCodec {
        len: seq_len::<T>,
        encode_since: seq_encode_since::<T>,
        extend: seq_extend::<T>,
    }
}

impl<T> DeltaCodec<T> {
    pub fn len(&self, value: &T) -> usize {
        (self.len)(value)
    }

    pub fn encode_since(
        &self,
        value: &T,
        from: usize,
        channel: &ChannelInfo,
    ) -> Result<Value, CodecError> {
        (self.encode_since)(value, from).map_err(|source| CodecError::Encode {
            channel: channel.name,
            source,
        })
    }

    pub fn extend(
        &self,
        value: &mut T,
        delta: Value,
        channel: &ChannelInfo,
    ) -> Result<(), CodecError> {
        (self.extend)(value, delta).map_err(|source| CodecError::Decode {
            channel: channel.name,
            type_name: channel.type_name,
            source,
        })
    }
}

/// Splits one stored channel write `{"reduce": v}` / `{"overwrite": v}`.
#[doc(hidden)]
pub fn split_write(value: Value, channel: &ChannelInfo) -> Result<(bool, Value), CodecError> {
    match value {
        Value::Object(mut map) if map.len() == 1 => {
            if let Some(v) = map.remove("reduce") {
                Ok((false, v))
            } else if let Some(v) = map.remove("overwrite") {
                Ok((true, v))
            } else {
                Err(CodecError::MalformedWrite {
                    channel: channel.name,
                })
            }
        }
        _ => Err(CodecError::MalformedWrite {
            channel: channel.name,
        }),
    }
}
