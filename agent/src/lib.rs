//! Typed tools, chat models and a tool-calling agent for stategraph graphs.

pub mod model;
pub mod tool;

pub use model::{ChatModel, ChatRequest, ChunkStream, ModelError, new_message_id, stream_to};
pub use tool::{Tool, ToolError, ToolSpec, Tools};

pub mod openai;
pub use openai::{OpenAiEnvError, OpenAiModel};
