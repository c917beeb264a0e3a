//! A run's message pieces (`StreamMode::MESSAGES`) in LangGraph Platform's wire
//! shapes: `messages-tuple` sends each piece as `[chunk, metadata]` in a `messages`
//! event; `messages` sends `messages/metadata` on a message's first piece, then the
//! message so far as `messages/partial` (`messages/complete` for a message sent
//! whole, such as a tool's result).

use std::collections::HashMap;

use serde_json::{Value, json};
use stategraph::{MessageBuilder, MessageChunk, Role};

/// The wire forms asked for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct MessageForms {
    /// `messages-tuple`.
    pub(crate) tuple: bool,
    /// `messages`.
    pub(crate) partial: bool,
}

/// LangGraph's metadata of a piece.
fn metadata(step: i64, node: &str, ns: &str) -> Value {
    json!({
        "langgraph_step": step,
        "langgraph_node": node,
        "langgraph_checkpoint_ns": ns,
    })
}

fn type_of(role: Role, chunk: bool) -> &'static str {
    match (role, chunk) {
        (Role::Assistant, true) => "AIMessageChunk",
        (Role::Assistant, false) => "ai",
        (Role::User, true) => "HumanMessageChunk",
        (Role::User, false) => "human",
        (Role::System, true) => "SystemMessageChunk",
        (Role::System, false) => "system",
        (Role::Tool, true) => "ToolMessageChunk",
        (Role::Tool, false) => "tool",
    }
}

/// A piece as LangGraph's message chunk dict.
pub(crate) fn chunk_json(chunk: &MessageChunk) -> Value {
    let pieces: Vec<Value> = chunk
        .tool_calls
        .iter()
        .map(|c| {
            json!({ "name": c.name, "args": c.arguments, "id": c.id, "index": c.index,
                    "type": "tool_call_chunk" })
        })
        .collect();
    // A tool's answer is sent whole, as LangGraph sends a `ToolMessage`.
    let piece = chunk.role != Role::Tool;
    let mut out = json!({
        "type": type_of(chunk.role, piece),
        "id": chunk.id,
        "content": chunk.content,
        "additional_kwargs": {},
        "response_metadata": {},
        "name": null,
        "tool_call_chunks": pieces,
        "tool_calls": [],
        "invalid_tool_calls": [],
    });
    if let Some(id) = &chunk.tool_call_id {
        out["tool_call_id"] = json!(id);
    }
    out
}

/// The message so far, as LangGraph's message dict.
fn message_json(b: &MessageBuilder, role: Role, tool_call_id: Option<&str>) -> Value {
    // Calls whose arguments are not whole yet are left out until they are.
    let tool_calls: Vec<Value> = b
        .clone()
        .finish()
        .map(|m| {
            m.tool_calls
                .iter()
                .map(|c| json!({ "name": c.name, "args": c.arguments, "id": c.id, "type": "tool_call" }))
                .collect()
        })
        .unwrap_or_default();
    let mut out = json!({
        "type": type_of(role, false),
        "id": b.id(),
        "content": b.content(),
        "additional_kwargs": {},
        "response_metadata": {},
        "name": null,
        "tool_calls": tool_calls,
        "invalid_tool_calls": [],
    });
    if let Some(id) = tool_call_id {
        out["tool_call_id"] = json!(id);
    }
    out
}

/// The messages of one run being joined, for the `messages` form.
#[derive(Default)]
pub(crate) struct MessageParts {
    building: HashMap<String, MessageBuilder>,
}

impl MessageParts {
    /// The wire events for one piece.
    pub(crate) fn wire(
        &mut self,
        forms: MessageForms,
        step: i64,
        node: &str,
        ns: &str,
        chunk: &MessageChunk,
    ) -> Vec<(String, Value)> {
        let suffix = if ns.is_empty() {
            String::new()
        } else {
            format!("|{ns}")
        };
        let meta = metadata(step, node, ns);
        let mut out = Vec::new();
        if forms.tuple {
            out.push((
                format!("messages{suffix}"),
                json!([chunk_json(chunk), meta]),
            ));
        }
        if forms.partial {
            let first = !self.building.contains_key(&chunk.id);
            let b = self.building.entry(chunk.id.clone()).or_default();
            if first {
                out.push((
                    format!("messages/metadata{suffix}"),
                    json!({ chunk.id.clone(): { "metadata": meta } }),
                ));
            }
            if b.push(chunk).is_ok() {
                // A tool's answer comes whole; a model's reply piece by piece.
                let kind = if chunk.role == Role::Tool {
                    "complete"
                } else {
                    "partial"
                };
                out.push((
                    format!("messages/{kind}{suffix}"),
                    json!([message_json(b, chunk.role, chunk.tool_call_id.as_deref())]),
                ));
            }
        }
        out
    }
}
