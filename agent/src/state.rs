//! States an agent runs over: [`AgentState`] (a state that holds a conversation)
//! and [`MessagesState`], the ready-made one.

use stategraph::prelude::*;

/// A state holding a conversation, for [`ToolNode`](crate::ToolNode),
/// [`tools_condition`](crate::tools_condition) and
/// [`ReactAgent`](crate::ReactAgent). Implement it for a state of your own with a
/// `#[reducer(messages)] messages: Vec<Message>` field:
///
/// ```
/// use stategraph::prelude::*;
/// use stategraph_agent::AgentState;
///
/// #[derive(GraphState, Clone, Debug, Default)]
/// struct Support {
///     #[reducer(messages)]
///     messages: Vec<Message>,
///     ticket: Option<String>,
/// }
///
/// impl AgentState for Support {
///     fn messages(&self) -> &[Message] {
///         &self.messages
///     }
///     fn add_messages(messages: Vec<Message>) -> SupportUpdate {
///         Support::update().messages(messages)
///     }
/// }
/// ```
pub trait AgentState: GraphState {
    /// The conversation, oldest first.
    fn messages(&self) -> &[Message];

    /// An update adding `messages` (a message with the id of one already there
    /// replaces it).
    fn add_messages(messages: Vec<Message>) -> Self::Update;
}

/// The conversation and nothing else: the state [`react_agent`](crate::react_agent)
/// runs over.
#[derive(GraphState, Clone, Debug, Default, PartialEq, schemars::JsonSchema)]
pub struct MessagesState {
    /// The conversation.
    #[reducer(messages)]
    pub messages: Vec<Message>,
}

impl AgentState for MessagesState {
    fn messages(&self) -> &[Message] {
        &self.messages
    }

    fn add_messages(messages: Vec<Message>) -> MessagesStateUpdate {
        MessagesState::update().messages(messages)
    }
}

/// The tool calls the conversation's last message asks for (none when the last
/// message is not the model's).
pub fn pending_tool_calls(messages: &[Message]) -> &[ToolCall] {
    messages
        .last()
        .filter(|m| m.role == Role::Assistant)
        .map_or(&[], |m| m.tool_calls.as_slice())
}
