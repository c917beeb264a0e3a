//! Typed state: the [`GraphState`] trait the derive implements, partial updates,
//! reducers, channel keys and per-channel codecs.

mod change;
mod channel;
mod chunk;
mod codec;
mod json;
mod message;
mod reducer;
mod traits;
mod write;

pub use change::{Change, ReduceError};
pub use channel::{ChannelInfo, ChannelKey, Persistence};
pub use chunk::{ChunkError, MessageBuilder, MessageChunk, ToolCallChunk};
pub use codec::{Checkpointable, CodecError};
pub use json::{InputError, state_to_json, update_from_json, update_to_json};
pub use message::{
    Message, MessageLike, MessageOp, RemoveAllMessages, RemoveMessage, Role, ToolCall,
};
pub use reducer::{
    Add, Addable, Append, LastValue, Merge, Mergeable, MessageList, Messages, Reducer, Sequence,
    SetLike, Union, WithReducer,
};
pub use traits::{GraphState, StateUpdate, Write};
pub use write::{ChangeSet, ChannelWrite, IntoChannelValue, InvalidUpdate};

#[doc(hidden)]
pub use codec::{Codec, DeltaCodec, append_delta, codec, messages_delta, split_write};
#[doc(hidden)]
pub use write::Pending;
