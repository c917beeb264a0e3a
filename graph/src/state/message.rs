//! Chat messages and the id-aware list the `messages` reducer maintains.

use serde::{Deserialize, Serialize};

use super::change::{Change, ReduceError};

/// A message type the `messages` reducer can keep: anything with an optional id.
///
/// Bring your own message type by implementing this trait; [`Message`] is a ready-made
/// one.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a message type for the `messages` reducer",
    label = "`messages` needs a list of messages",
    note = "use `stategraph::Message`, or implement `stategraph::MessageLike` for your type"
)]
pub trait MessageLike: Clone {
    /// The message id, if it has one.
    fn id(&self) -> Option<&str>;
    /// Gives the message an id (called by the reducer for messages without one).
    fn set_id(&mut self, id: String);
}

/// Who wrote a [`Message`].
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions for the model.
    System,
    /// The human.
    User,
    /// The model.
    Assistant,
    /// A tool's result.
    Tool,
}

/// A request from the model to call a tool.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Id the tool's answer refers back to.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Arguments as JSON.
    pub arguments: serde_json::Value,
}

/// A chat message, for states that hold a conversation with `#[reducer(messages)]`.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Stable id; the reducer assigns one when it is `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Author.
    pub role: Role,
    /// Text content.
    pub content: String,
    /// Tool calls requested by an assistant message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For a tool message, the id of the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    fn new(role: Role, content: impl Into<String>) -> Self {
        Self {
            id: None,
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::new(Role::System, content)
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::new(Role::User, content)
    }

    /// An assistant message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new(Role::Assistant, content)
    }

    /// A tool result answering the call `tool_call_id`.
    pub fn tool(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            tool_call_id: Some(tool_call_id.into()),
            ..Self::new(Role::Tool, content)
        }
    }

    /// The same message with an id (writing it again with that id replaces it).
    #[must_use]
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// The same message carrying tool calls.
    #[must_use]
    pub fn with_tool_calls(mut self, calls: impl IntoIterator<Item = ToolCall>) -> Self {
        self.tool_calls = calls.into_iter().collect();
        self
    }
}

impl MessageLike for Message {
    fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }
    fn set_id(&mut self, id: String) {
        self.id = Some(id);
    }
}

/// One write to a `messages` channel.
///
/// Builder methods accept messages directly (an upsert), [`RemoveMessage`] and
/// [`RemoveAllMessages`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageOp<M> {
    /// Appends the message, or replaces the message with the same id in place.
    Upsert(M),
    /// Removes the message with this id; an unknown id rejects the step.
    Remove(String),
    /// Removes every message.
    RemoveAll,
}

/// Removes the message with this id from a `messages` channel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoveMessage(pub String);

impl RemoveMessage {
    /// Removes the message with id `id`.
    pub fn new(id: impl Into<String>) -> Self {
        Self(id.into())
    }
}

/// Clears a `messages` channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RemoveAllMessages;

pub(crate) fn check_messages<'a, M: MessageLike + 'a>(
    current: &[M],
    ops: impl Iterator<Item = &'a MessageOp<M>> + Clone,
) -> Result<(), ReduceError> {
    if !ops.clone().any(|op| matches!(op, MessageOp::Remove(_))) {
        return Ok(());
    }
    // Replays the fold on ids alone, including the ids it will assign, so `check`
    // accepts exactly what `fold_messages` applies.
    let mut ids: Vec<Option<String>> = current.iter().map(|m| m.id().map(str::to_owned)).collect();
    for op in ops {
        match op {
            MessageOp::Upsert(m) => match m.id() {
                Some(id) => {
                    if !ids.iter().any(|x| x.as_deref() == Some(id)) {
                        ids.push(Some(id.to_owned()));
                    }
                }
                None => {
                    let id = fresh_id(ids.len(), |candidate| {
                        ids.iter().any(|x| x.as_deref() == Some(candidate))
                    });
                    ids.push(Some(id));
                }
            },
            MessageOp::Remove(id) => {
                let before = ids.len();
                ids.retain(|x| x.as_deref() != Some(id.as_str()));
                if ids.len() == before {
                    return Err(ReduceError::UnknownMessageId { id: id.clone() });
                }
            }
            MessageOp::RemoveAll => ids.clear(),
        }
    }
    Ok(())
}

pub(crate) fn fold_messages<M: MessageLike>(
    list: &mut Vec<M>,
    ops: impl Iterator<Item = MessageOp<M>>,
) -> Change {
    let from = list.len();
    let mut appended_only = true;
    for op in ops {
        match op {
            MessageOp::Upsert(mut m) => {
                let existing = m
                    .id()
                    .and_then(|id| list.iter().position(|x| x.id() == Some(id)));
                match existing {
                    Some(pos) => {
                        list[pos] = m;
                        appended_only = false;
                    }
                    None => {
                        if m.id().is_none() {
                            let id = fresh_id(list.len(), |candidate| {
                                list.iter().any(|x| x.id() == Some(candidate))
                            });
                            m.set_id(id);
                        }
                        list.push(m);
                    }
                }
            }
            MessageOp::Remove(id) => {
                list.retain(|x| x.id() != Some(id.as_str()));
                appended_only = false;
            }
            MessageOp::RemoveAll => {
                list.clear();
                appended_only = false;
            }
        }
    }
    if appended_only {
        Change::Appended { from }
    } else {
        Change::Replaced
    }
}

/// A deterministic id not yet taken: `msg-<n>` for the first free `n` from the list's
/// length, so the same writes always get the same ids.
fn fresh_id(len: usize, taken: impl Fn(&str) -> bool) -> String {
    let mut n = len;
    loop {
        let id = format!("msg-{n}");
        if !taken(&id) {
            return id;
        }
        n += 1;
    }
}
