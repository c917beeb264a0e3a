#![doc = include_str!("../docs/tutorial.md")]
#![cfg_attr(not(test), deny(clippy::too_many_lines))]

pub mod model;
pub mod react;
pub mod scripted;
pub mod state;
pub mod tool;
pub mod tool_node;

pub use model::{ChatModel, ChatRequest, ChunkStream, ModelError, new_message_id, stream_to};
pub use react::{AgentError, AgentNodes, ReactAgent, Review, react_agent};
pub use scripted::ScriptedModel;
pub use state::{AgentState, MessagesState, MessagesStateUpdate, pending_tool_calls};
pub use tool::{Tool, ToolError, ToolSpec, Tools};
pub use tool_node::{ToolNode, tools_condition};

#[cfg(feature = "openai")]
pub mod openai;
#[cfg(feature = "openai")]
pub use openai::{OpenAiEnvError, OpenAiModel};

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;
#[doc = include_str!("../docs/tool-attribute.md")]
pub use stategraph_agent_macros::tool;
pub use tool::{Json, ToolOutput};
