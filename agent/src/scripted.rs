//! [`ScriptedModel`]: a chat model that answers from a script — deterministic,
//! offline, for tests and examples.

use std::sync::{Arc, Mutex};

use futures::stream;
use stategraph::{BoxFuture, Message, MessageChunk, Role, ToolCallChunk};

use crate::model::{ChatModel, ChatRequest, ChunkStream, ModelError, new_message_id};

/// A chat model replying with its script's messages, one per call, in order; it
/// streams each reply in pieces of a few characters (text, and each tool call's
/// argument text) so streaming consumers see many chunks. It records every request
/// it was sent.
#[derive(Clone, Debug)]
pub struct ScriptedModel {
    inner: Arc<Mutex<Script>>,
    piece: usize,
}

#[derive(Debug)]
struct Script {
    replies: Vec<Message>,
    requests: Vec<ChatRequest>,
}

impl ScriptedModel {
    /// A model replying with `replies`, in order. A reply without an id gets one.
    pub fn new(replies: impl IntoIterator<Item = Message>) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Script {
                replies: replies.into_iter().collect(),
                requests: Vec::new(),
            })),
            piece: 4,
        }
    }

    /// The same model streaming pieces of `chars` characters (at least 1).
    #[must_use]
    pub fn piece_size(mut self, chars: usize) -> Self {
        self.piece = chars.max(1);
        self
    }

    /// The requests sent so far, oldest first.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.inner
            .lock()
            .map(|s| s.requests.clone())
            .unwrap_or_default()
    }

    fn next_reply(&self, request: &ChatRequest) -> Result<Message, ModelError> {
        let mut script = self
            .inner
            .lock()
            .map_err(|_| ModelError::ScriptEnded { call: 0 })?;
        script.requests.push(request.clone());
        let call = script.requests.len();
        let mut reply = script
            .replies
            .get(call - 1)
            .cloned()
            .ok_or(ModelError::ScriptEnded { call })?;
        reply.role = Role::Assistant;
        if reply.id.is_none() {
            reply.id = Some(new_message_id());
        }
        Ok(reply)
    }
}

/// `text` in pieces of `n` characters (one empty piece for empty text).
fn pieces(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return Vec::new();
    }
    chars.chunks(n).map(|c| c.iter().collect()).collect()
}

impl ChatModel for ScriptedModel {
    fn invoke<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<Message, ModelError>> {
        Box::pin(async move { self.next_reply(request) })
    }

    fn stream<'a>(&'a self, request: &'a ChatRequest) -> ChunkStream<'a> {
        let reply = match self.next_reply(request) {
            Ok(r) => r,
            Err(e) => return Box::pin(stream::iter([Err(e)])),
        };
        let id = reply.id.clone().unwrap_or_default();
        let mut chunks: Vec<MessageChunk> = pieces(&reply.content, self.piece)
            .into_iter()
            .map(|p| MessageChunk::text(id.clone(), p))
            .collect();
        for (index, call) in reply.tool_calls.iter().enumerate() {
            let mut first = true;
            let args = call.arguments.to_string();
            for p in pieces(&args, self.piece) {
                let mut chunk = MessageChunk::text(id.clone(), "");
                chunk.tool_calls.push(ToolCallChunk {
                    index,
                    id: first.then(|| call.id.clone()),
                    name: first.then(|| call.name.clone()),
                    arguments: p,
                });
                first = false;
                chunks.push(chunk);
            }
        }
        if chunks.is_empty() {
            chunks.push(MessageChunk::text(id, ""));
        }
        Box::pin(stream::iter(chunks.into_iter().map(Ok)))
    }
}
