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
pub(crate) fn message_json(b: &MessageBuilder, role: Role, tool_call_id: Option<&str>) -> Value {
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

/// A message being written: its pieces so far, and the task writing it.
struct Open {
    node: String,
    ns: String,
    step: i64,
    builder: MessageBuilder,
}

/// A message whose task ended: whole, with where it was written.
pub(crate) struct Finished {
    pub(crate) node: String,
    pub(crate) step: i64,
    pub(crate) message: stategraph::Message,
}

/// The messages of one run being written, by id, until the task writing them ends.
#[derive(Default)]
pub(crate) struct MessageParts {
    open: HashMap<String, Open>,
}

impl MessageParts {
    /// Whether no piece of message `id` came yet.
    pub(crate) fn is_new(&self, id: &str) -> bool {
        !self.open.contains_key(id)
    }

    /// The wire events for one piece (none when neither form was asked for; the
    /// piece is kept either way, for the message's end).
    pub(crate) fn wire(
        &mut self,
        forms: MessageForms,
        step: i64,
        node: &str,
        ns: &str,
        chunk: &MessageChunk,
    ) -> Vec<(String, Value)> {
        let suffix = suffix(ns);
        let meta = metadata(step, node, ns);
        let mut out = Vec::new();
        if forms.tuple {
            out.push((
                format!("messages{suffix}"),
                json!([chunk_json(chunk), meta]),
            ));
        }
        let first = self.is_new(&chunk.id);
        let open = self.open.entry(chunk.id.clone()).or_insert_with(|| Open {
            node: node.to_string(),
            ns: ns.to_string(),
            step,
            builder: MessageBuilder::new(),
        });
        if forms.partial && first {
            out.push((
                format!("messages/metadata{suffix}"),
                json!({ chunk.id.clone(): { "metadata": meta } }),
            ));
        }
        if open.builder.push(chunk).is_ok() && forms.partial {
            // A tool's answer comes whole; a model's reply piece by piece.
            let kind = if chunk.role == Role::Tool {
                "complete"
            } else {
                "partial"
            };
            out.push((
                format!("messages/{kind}{suffix}"),
                json!([message_json(
                    &open.builder,
                    chunk.role,
                    chunk.tool_call_id.as_deref()
                )]),
            ));
        }
        out
    }

    /// The task of `node` (in namespace `ns`) ended: its messages are whole. In the
    /// `messages-tuple` form each model reply gets a last, empty piece carrying
    /// `finish_reason` (`stop`, or `tool_calls`), as a model's stream ends; the
    /// messages themselves are returned.
    pub(crate) fn finish_task(
        &mut self,
        forms: MessageForms,
        node: &str,
        ns: &str,
    ) -> (Vec<(String, Value)>, Vec<Finished>) {
        let ids: Vec<String> = self
            .open
            .iter()
            .filter(|(_, o)| o.node == node && o.ns == ns)
            .map(|(id, _)| id.clone())
            .collect();
        let mut out = Vec::new();
        let mut finished = Vec::new();
        for id in ids {
            let Some(open) = self.open.remove(&id) else {
                continue;
            };
            let Ok(message) = open.builder.finish() else {
                continue;
            };
            if forms.tuple && message.role == Role::Assistant {
                let reason = if message.tool_calls.is_empty() {
                    "stop"
                } else {
                    "tool_calls"
                };
                let mut last = chunk_json(&MessageChunk::text(id.clone(), ""));
                last["response_metadata"] = json!({ "finish_reason": reason });
                last["chunk_position"] = json!("last");
                out.push((
                    format!("messages{}", suffix(ns)),
                    json!([last, metadata(open.step, node, ns)]),
                ));
            }
            finished.push(Finished {
                node: open.node,
                step: open.step,
                message,
            });
        }
        (out, finished)
    }
}

fn suffix(ns: &str) -> String {
    if ns.is_empty() {
        String::new()
    } else {
        format!("|{ns}")
    }
}
