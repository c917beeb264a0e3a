//! Pieces of a message while a model writes it ([`MessageChunk`]), and
//! [`MessageBuilder`], which joins them into the [`Message`] they make up.

use serde::{Deserialize, Serialize};

use super::message::{Message, Role, ToolCall};

/// A piece of a message as it is being written — a model's streamed output, sent
/// to a run's stream in [`StreamMode::MESSAGES`](crate::StreamMode::MESSAGES) with
/// [`NodeContext::emit_message`](crate::NodeContext::emit_message).
///
/// Every chunk of one message carries that message's id; joined in order with a
/// [`MessageBuilder`] they make the whole message (text concatenated, each tool
/// call's argument text concatenated by its `index`). A message that is already
/// whole (a tool's result) is sent as one chunk: [`MessageChunk::whole`].
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MessageChunk {
    /// The id of the message this chunk is part of.
    pub id: String,
    /// Who writes the message.
    pub role: Role,
    /// Text to add to the message's content.
    #[serde(default)]
    pub content: String,
    /// Pieces of the tool calls the message requests.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallChunk>,
    /// For a tool message, the id of the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

/// A piece of one tool call: pieces with the same `index` belong to the same call;
/// the first usually names the call (`id`, `name`), later ones add argument text.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallChunk {
    /// Which call of the message (0 for the first).
    pub index: usize,
    /// The call's id, when this piece carries it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The tool's name, when this piece carries it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Text to add to the call's arguments (JSON once every piece is joined).
    #[serde(default)]
    pub arguments: String,
}

impl MessageChunk {
    /// A text piece of the assistant message `id`.
    pub fn text(id: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            role: Role::Assistant,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    /// A whole message as one chunk (its id, or `id` when it has none).
    pub fn whole(message: &Message, id: impl Into<String>) -> Self {
        Self {
            id: message.id.clone().unwrap_or_else(|| id.into()),
            role: message.role,
            content: message.content.clone(),
            tool_calls: message
                .tool_calls
                .iter()
                .enumerate()
                .map(|(index, call)| ToolCallChunk {
                    index,
                    id: Some(call.id.clone()),
                    name: Some(call.name.clone()),
                    arguments: call.arguments.to_string(),
                })
                .collect(),
            tool_call_id: message.tool_call_id.clone(),
        }
    }
}

/// Why chunks do not make a message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChunkError {
    /// A chunk belongs to another message than the ones before it.
    #[error(
        "chunk of message `{found}` joined to message `{expected}`: use one MessageBuilder per message"
    )]
    OtherMessage {
        /// The id of the message being built.
        expected: String,
        /// The chunk's message id.
        found: String,
    },
    /// No chunk named a tool call's id or tool.
    #[error(
        "tool call {index} of message `{message}` has no {missing}: one of its chunks must carry it"
    )]
    IncompleteToolCall {
        /// The message.
        message: String,
        /// The call's index.
        index: usize,
        /// `id` or `name`.
        missing: &'static str,
    },
    /// A tool call's joined arguments are not JSON.
    #[error(
        "the arguments of tool call `{call}` ({tool}) are not JSON: {error}; they were: {text}"
    )]
    BadArguments {
        /// The call id.
        call: String,
        /// The tool.
        tool: String,
        /// What the parser said.
        error: String,
        /// The joined text.
        text: String,
    },
}

/// Joins the chunks of one message, in order, into that message.
///
/// ```
/// use stategraph::{MessageBuilder, MessageChunk, ToolCallChunk};
///
/// let mut b = MessageBuilder::new();
/// b.push(&MessageChunk::text("m1", "Let me ")).unwrap();
/// b.push(&MessageChunk::text("m1", "check.")).unwrap();
/// let mut call = MessageChunk::text("m1", "");
/// call.tool_calls.push(ToolCallChunk {
///     index: 0,
///     id: Some("call-1".into()),
///     name: Some("weather".into()),
///     arguments: "{\"city\":".into(),
/// });
/// b.push(&call).unwrap();
/// call.tool_calls[0] = ToolCallChunk { index: 0, id: None, name: None, arguments: "\"Oslo\"}".into() };
/// b.push(&call).unwrap();
/// let message = b.finish().unwrap();
/// assert_eq!(message.id.as_deref(), Some("m1"));
/// assert_eq!(message.content, "Let me check.");
/// assert_eq!(message.tool_calls[0].arguments["city"], "Oslo");
/// ```
#[derive(Clone, Debug, Default)]
pub struct MessageBuilder {
    id: Option<String>,
    role: Option<Role>,
    content: String,
    calls: Vec<PartialCall>,
    tool_call_id: Option<String>,
}

#[derive(Clone, Debug, Default)]
struct PartialCall {
    index: usize,
    id: Option<String>,
    name: Option<String>,
    arguments: String,
}

impl MessageBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the next chunk.
    ///
    /// # Errors
    /// [`ChunkError::OtherMessage`] when `chunk` belongs to another message.
    pub fn push(&mut self, chunk: &MessageChunk) -> Result<(), ChunkError> {
        match &self.id {
            Some(id) if *id != chunk.id => {
                return Err(ChunkError::OtherMessage {
                    expected: id.clone(),
                    found: chunk.id.clone(),
                });
            }
            Some(_) => {}
            None => self.id = Some(chunk.id.clone()),
        }
        self.role.get_or_insert(chunk.role);
        self.content.push_str(&chunk.content);
        if self.tool_call_id.is_none() {
            self.tool_call_id.clone_from(&chunk.tool_call_id);
        }
        for piece in &chunk.tool_calls {
            let at = match self.calls.iter().position(|c| c.index == piece.index) {
                Some(at) => at,
                None => {
                    self.calls.push(PartialCall {
                        index: piece.index,
                        ..PartialCall::default()
                    });
                    self.calls.len() - 1
                }
            };
            let call = &mut self.calls[at];
            if call.id.is_none() {
                call.id.clone_from(&piece.id);
            }
            if call.name.is_none() {
                call.name.clone_from(&piece.name);
            }
            call.arguments.push_str(&piece.arguments);
        }
        Ok(())
    }

    /// The id of the message being built (`None` before the first chunk).
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// The text so far.
    pub fn content(&self) -> &str {
        &self.content
    }

    /// The whole message. Tool calls come in `index` order; empty arguments are `{}`.
    ///
    /// # Errors
    /// A tool call without an id or name, or whose arguments are not JSON.
    pub fn finish(mut self) -> Result<Message, ChunkError> {
        let message = self.id.clone().unwrap_or_default();
        self.calls.sort_by_key(|c| c.index);
        let mut tool_calls = Vec::with_capacity(self.calls.len());
        for call in self.calls {
            let missing = |what| ChunkError::IncompleteToolCall {
                message: message.clone(),
                index: call.index,
                missing: what,
            };
            let id = call.id.ok_or_else(|| missing("id"))?;
            let name = call.name.ok_or_else(|| missing("name"))?;
            let text = call.arguments.trim();
            let arguments = if text.is_empty() {
                serde_json::Value::Object(serde_json::Map::new())
            } else {
                serde_json::from_str(text).map_err(|e| ChunkError::BadArguments {
                    call: id.clone(),
                    tool: name.clone(),
                    error: e.to_string(),
                    text: call.arguments.clone(),
                })?
            };
            tool_calls.push(ToolCall {
                id,
                name,
                arguments,
            });
        }
        Ok(Message {
            id: self.id,
            role: self.role.unwrap_or(Role::Assistant),
            content: self.content,
            tool_calls,
            tool_call_id: self.tool_call_id,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_of_two_interleaved_tool_calls_join_by_index() {
        let mut b = MessageBuilder::new();
        let piece = |index, id: Option<&str>, name: Option<&str>, args: &str| MessageChunk {
            tool_calls: vec![ToolCallChunk {
                index,
                id: id.map(str::to_owned),
                name: name.map(str::to_owned),
                arguments: args.to_owned(),
            }],
            ..MessageChunk::text("m", "")
        };
        for c in [
            piece(1, Some("b"), Some("two"), "{\"x\""),
            piece(0, Some("a"), Some("one"), ""),
            piece(1, None, None, ":2}"),
        ] {
            b.push(&c).unwrap();
        }
        let m = b.finish().unwrap();
        let names: Vec<_> = m.tool_calls.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["one", "two"]);
        assert_eq!(m.tool_calls[0].arguments, serde_json::json!({}));
        assert_eq!(m.tool_calls[1].arguments, serde_json::json!({"x": 2}));
    }

    #[test]
    fn bad_pieces_are_named_errors() {
        let mut b = MessageBuilder::new();
        b.push(&MessageChunk::text("m", "a")).unwrap();
        let err = b.push(&MessageChunk::text("n", "b")).unwrap_err();
        assert!(matches!(err, ChunkError::OtherMessage { .. }), "{err}");

        let mut b = MessageBuilder::new();
        let mut c = MessageChunk::text("m", "");
        c.tool_calls.push(ToolCallChunk {
            index: 0,
            id: Some("c1".into()),
            name: Some("t".into()),
            arguments: "{\"x\":".into(),
        });
        b.push(&c).unwrap();
        let err = b.finish().unwrap_err();
        assert!(err.to_string().contains("not JSON"), "{err}");
    }

    #[test]
    fn a_whole_message_round_trips_through_one_chunk() {
        let m = Message::assistant("hi")
            .with_id("m9")
            .with_tool_calls([ToolCall {
                id: "c".into(),
                name: "t".into(),
                arguments: serde_json::json!({"a": [1, 2]}),
            }]);
        let mut b = MessageBuilder::new();
        b.push(&MessageChunk::whole(&m, "unused")).unwrap();
        assert_eq!(b.finish().unwrap(), m);
    }
}
