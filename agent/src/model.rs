//! Chat models: [`ChatModel`] (messages and tool specs in, a message out, whole or
//! as a stream of [`MessageChunk`]s), and [`stream_to`], which streams a reply into
//! a node's run stream (`StreamMode::MESSAGES`) while building the whole message.

use futures::StreamExt;
use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use stategraph::{BoxFuture, ChunkError, Message, MessageBuilder, MessageChunk, NodeContext};

use crate::tool::ToolSpec;

/// What a chat model is asked: the conversation so far and the tools it may call.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The conversation, oldest first.
    pub messages: Vec<Message>,
    /// The tools the model may call.
    #[serde(default)]
    pub tools: Vec<ToolSpec>,
}

impl ChatRequest {
    /// A request with `messages` and no tools.
    pub fn new(messages: impl Into<Vec<Message>>) -> Self {
        Self {
            messages: messages.into(),
            tools: Vec::new(),
        }
    }

    /// The same request offering `tools`.
    #[must_use]
    pub fn with_tools(mut self, tools: impl Into<Vec<ToolSpec>>) -> Self {
        self.tools = tools.into();
        self
    }
}

/// A model's reply as it is written: chunks of one message, in order.
pub type ChunkStream<'a> = BoxStream<'a, Result<MessageChunk, ModelError>>;

/// Why a model gave no reply.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The model server answered with an error status.
    #[error("the model server at {url} answered HTTP {status}: {body}")]
    Status {
        /// The endpoint.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The start of the response body.
        body: String,
    },
    /// The model server could not be reached, or the connection broke.
    #[error(
        "could not reach the model server at {url}: {message}; check the base URL and that the server runs"
    )]
    Transport {
        /// The endpoint.
        url: String,
        /// What failed.
        message: String,
    },
    /// The model server's reply is not in the expected format.
    #[error("the model server at {url} sent a reply that is not a chat completion: {message}")]
    Malformed {
        /// The endpoint.
        url: String,
        /// What is wrong with it.
        message: String,
    },
    /// The streamed chunks do not make a message.
    #[error("the model's streamed reply does not make a message")]
    Chunks(#[from] ChunkError),
    /// A scripted model was asked more often than it has replies for.
    #[error(
        "the scripted model has no reply left for call {call}: give it one reply per model call"
    )]
    ScriptEnded {
        /// Which call (1 for the first).
        call: usize,
    },
}

/// A chat model: messages and tool specs in, a message (text and tool calls) out.
///
/// Implement [`invoke`](ChatModel::invoke); override [`stream`](ChatModel::stream)
/// when the model can send its reply in pieces (its default sends the whole reply
/// as one chunk).
pub trait ChatModel: Send + Sync + 'static {
    /// The whole reply (an assistant message; its id set).
    ///
    /// # Errors
    /// The model could not be asked or its reply could not be read.
    fn invoke<'a>(&'a self, request: &'a ChatRequest)
    -> BoxFuture<'a, Result<Message, ModelError>>;

    /// The reply as it is written: chunks of one message, all with the same id.
    fn stream<'a>(&'a self, request: &'a ChatRequest) -> ChunkStream<'a> {
        Box::pin(futures::stream::once(async move {
            let message = self.invoke(request).await?;
            Ok(MessageChunk::whole(&message, new_message_id()))
        }))
    }
}

/// A fresh message id (`msg-` and a random UUID).
pub fn new_message_id() -> String {
    format!("msg-{}", uuid::Uuid::new_v4())
}

/// Asks `model` for a streamed reply, sends each chunk to the run's stream as it
/// arrives ([`NodeContext::emit_message`]; a `MESSAGES` event when the run is
/// streamed in that mode), and returns the whole message the chunks make — the
/// message to write to the state, with the chunks' id.
///
/// # Errors
/// The model's error, or chunks that do not make a message.
pub async fn stream_to(
    model: &dyn ChatModel,
    request: &ChatRequest,
    ctx: &NodeContext,
) -> Result<Message, ModelError> {
    let mut chunks = model.stream(request);
    let mut builder = MessageBuilder::new();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk?;
        builder.push(&chunk)?;
        ctx.emit_message(chunk).await;
    }
    let mut message = builder.finish()?;
    if message.id.is_none() {
        message.id = Some(new_message_id());
    }
    Ok(message)
}
