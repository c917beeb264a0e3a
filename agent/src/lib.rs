//! Typed tools, chat models and a tool-calling agent for stategraph graphs.

pub mod model;
pub mod tool;

pub use model::{ChatModel, ChatRequest, ChunkStream, ModelError, new_message_id, stream_to};
pub use tool::{Tool, ToolError, ToolSpec, Tools};

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;
#[doc = include_str!("../docs/tool-attribute.md")]
pub use stategraph_agent_macros::tool;
pub use tool::{Json, ToolOutput};
