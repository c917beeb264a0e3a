//! Chat messages in LangChain's shape, the one LangGraph's clients send and read.
//!
//! Out: a message of a `messages` channel (`stategraph::Message`'s JSON: `role`,
//! `content`, `tool_calls: [{id, name, arguments}]`, `tool_call_id`) goes on the wire
//! as LangChain's dict: `type` (`human`/`ai`/`system`/`tool`), `tool_calls: [{name,
//! args, id, type: "tool_call"}]`, `additional_kwargs`, `response_metadata` (with
//! `finish_reason` on a model's message), `name`, `id`. A node's update shows the
//! messages it wrote, and a removal as LangChain's `RemoveMessage`.
//!
//! In: everything LangChain's clients send — a bare string (a user message), `{role}`
//! and `{type}` dicts, content as a list of text blocks, `tool_calls` with `args`,
//! `{"type": "remove", "id"}` — becomes the reducer's operations. Fields of a message
//! type of your own pass through untouched.

use serde_json::{Map, Value, json};
use stategraph::GraphState;

/// The id LangGraph's `RemoveMessage` carries to clear the whole list.
const REMOVE_ALL: &str = "__remove_all__";

/// Keys LangChain adds to every message that `stategraph::Message` has no field for.
const LANGCHAIN_ONLY: &[&str] = &[
    "additional_kwargs",
    "response_metadata",
    "example",
    "invalid_tool_calls",
    "usage_metadata",
    "artifact",
    "status",
    "tool_call_chunks",
];

/// The role of a LangChain `type` or OpenAI-style `role`.
fn role_of(name: &str) -> Option<&'static str> {
    Some(match name {
        "human" | "user" | "HumanMessage" | "HumanMessageChunk" => "user",
        "ai" | "assistant" | "AIMessage" | "AIMessageChunk" => "assistant",
        "system" | "developer" | "SystemMessage" | "SystemMessageChunk" => "system",
        "tool" | "ToolMessage" | "ToolMessageChunk" => "tool",
        _ => return None,
    })
}

/// LangChain's `type` of a role.
fn type_of(role: &str) -> Option<&'static str> {
    Some(match role {
        "user" => "human",
        "assistant" => "ai",
        "system" => "system",
        "tool" => "tool",
        _ => return None,
    })
}

fn is_messages(reducer: &str) -> bool {
    reducer == "messages"
}

/// One wire item of a `messages` channel as a reducer operation.
fn operation(item: Value) -> Value {
    match item {
        Value::String(s) if s == "remove_all" => Value::String(s),
        Value::String(text) => json!({ "upsert": { "role": "user", "content": text } }),
        Value::Object(m) if m.contains_key("upsert") || m.contains_key("remove") => {
            Value::Object(m)
        }
        Value::Object(m) if m.get("type").and_then(Value::as_str) == Some("remove") => {
            match m.get("id") {
                Some(Value::String(id)) if id == REMOVE_ALL => json!("remove_all"),
                Some(id) => json!({ "remove": id }),
                // No id: left for the decoder to refuse, naming the item.
                None => Value::Object(m),
            }
        }
        Value::Object(m) => json!({ "upsert": message_in(m) }),
        other => other,
    }
}

/// A LangChain message dict as `stategraph::Message`'s JSON.
fn message_in(mut m: Map<String, Value>) -> Value {
    if let Some(Value::String(name)) = m.get("role")
        && let Some(role) = role_of(name)
    {
        m.insert("role".into(), json!(role));
    } else if !m.contains_key("role")
        && let Some(role) = m.get("type").and_then(Value::as_str).and_then(role_of)
    {
        m.insert("role".into(), json!(role));
    }
    m.remove("type");
    for key in LANGCHAIN_ONLY {
        m.remove(*key);
    }
    if m.get("name").is_some_and(Value::is_null) {
        m.remove("name");
    }
    match m.get("content") {
        Some(Value::Null) => {
            m.insert("content".into(), json!(""));
        }
        Some(Value::Array(blocks)) => {
            if let Some(text) = text_of(blocks) {
                m.insert("content".into(), Value::String(text));
            }
        }
        _ => {}
    }
    if let Some(Value::Array(calls)) = m.get_mut("tool_calls") {
        for call in calls.iter_mut().filter_map(Value::as_object_mut) {
            call.remove("type");
            if !call.contains_key("arguments")
                && let Some(args) = call.remove("args")
            {
                call.insert("arguments".into(), args);
            }
        }
    }
    Value::Object(m)
}

/// Content given as blocks, when every block is text: the texts joined. Other blocks
/// (images, files) stay, for the decoder to refuse or a message type of your own to
/// take.
fn text_of(blocks: &[Value]) -> Option<String> {
    let mut text = String::new();
    for block in blocks {
        match block {
            Value::String(s) => text.push_str(s),
            Value::Object(b) if b.get("type").and_then(Value::as_str) == Some("text") => {
                text.push_str(b.get("text").and_then(Value::as_str)?);
            }
            _ => return None,
        }
    }
    Some(text)
}

/// Rewrites the `messages` channels of wire input into the reducer's operations.
pub(crate) fn input<S: GraphState>(value: Value) -> Value {
    let Value::Object(mut map) = value else {
        return value;
    };
    for ch in S::CHANNELS.iter().filter(|c| is_messages(c.reducer)) {
        if let Some(v) = map.remove(ch.name) {
            let items = match v {
                Value::Array(items) => items,
                one => vec![one],
            };
            map.insert(
                ch.name.to_string(),
                Value::Array(items.into_iter().map(operation).collect()),
            );
        }
    }
    Value::Object(map)
}

/// A message of a state (`stategraph::Message`'s JSON) in LangChain's shape; an
/// object that is not one is left as it is.
fn message_out(item: &mut Value) {
    let Value::Object(m) = item else {
        return;
    };
    let Some(ty) = m.get("role").and_then(Value::as_str).and_then(type_of) else {
        return;
    };
    if !m.contains_key("content") {
        return;
    }
    m.remove("role");
    m.insert("type".into(), json!(ty));
    m.entry("id").or_insert(Value::Null);
    m.entry("name").or_insert(Value::Null);
    m.entry("additional_kwargs").or_insert_with(|| json!({}));
    let calls: Vec<Value> = match m.remove("tool_calls") {
        Some(Value::Array(calls)) => calls.into_iter().map(tool_call_out).collect(),
        _ => Vec::new(),
    };
    match ty {
        "ai" => {
            let finish = if calls.is_empty() {
                "stop"
            } else {
                "tool_calls"
            };
            m.entry("response_metadata")
                .or_insert_with(|| json!({ "finish_reason": finish }));
            m.insert("tool_calls".into(), Value::Array(calls));
            m.entry("invalid_tool_calls").or_insert_with(|| json!([]));
            m.entry("usage_metadata").or_insert(Value::Null);
        }
        "tool" => {
            m.entry("response_metadata").or_insert_with(|| json!({}));
            m.entry("tool_call_id").or_insert(Value::Null);
            m.entry("artifact").or_insert(Value::Null);
            m.entry("status").or_insert_with(|| json!("success"));
        }
        _ => {
            m.entry("response_metadata").or_insert_with(|| json!({}));
        }
    }
}

/// A whole message in LangChain's shape.
pub(crate) fn langchain_message(message: &stategraph::Message) -> Value {
    let mut out = serde_json::to_value(message).unwrap_or(Value::Null);
    message_out(&mut out);
    out
}

fn tool_call_out(call: Value) -> Value {
    let Value::Object(mut c) = call else {
        return call;
    };
    if let Some(args) = c.remove("arguments") {
        c.insert("args".into(), args);
    }
    c.insert("type".into(), json!("tool_call"));
    Value::Object(c)
}

/// A reducer operation (or a message) of an update, as the message it writes.
fn operation_out(item: &mut Value) {
    match item {
        Value::String(s) if s == "remove_all" => *item = removal(REMOVE_ALL),
        Value::Object(m) if m.len() == 1 && m.contains_key("upsert") => {
            if let Some(mut inner) = m.remove("upsert") {
                message_out(&mut inner);
                *item = inner;
            }
        }
        Value::Object(m) if m.len() == 1 && m.contains_key("remove") => {
            let id = m.get("remove").and_then(Value::as_str).unwrap_or_default();
            *item = removal(id);
        }
        other => message_out(other),
    }
}

/// LangChain's `RemoveMessage`.
fn removal(id: &str) -> Value {
    json!({ "type": "remove", "id": id, "content": "", "additional_kwargs": {},
            "response_metadata": {}, "name": null })
}

/// The state's `messages` channels in LangChain's shape.
pub(crate) fn output<S: GraphState>(values: &mut Value) {
    each_messages_list::<S>(values, message_out);
}

/// A node's update (`{channel: write}`) with its `messages` writes as the messages.
pub(crate) fn update_output<S: GraphState>(update: &mut Value) {
    each_messages_list::<S>(update, operation_out);
}

fn each_messages_list<S: GraphState>(values: &mut Value, f: fn(&mut Value)) {
    let Value::Object(map) = values else {
        return;
    };
    for ch in S::CHANNELS.iter().filter(|c| is_messages(c.reducer)) {
        match map.get_mut(ch.name) {
            Some(Value::Array(items)) => items.iter_mut().for_each(f),
            Some(one @ Value::Object(_)) => f(one),
            _ => {}
        }
    }
}

/// A subgraph's values or update, whose state type the parent does not know: every
/// list item shaped like a message or a message operation is shown in LangChain's
/// shape.
pub(crate) fn untyped_output(values: &mut Value) {
    let Value::Object(map) = values else {
        return;
    };
    for value in map.values_mut() {
        if let Value::Array(items) = value {
            for item in items.iter_mut() {
                let op = match item {
                    Value::Object(m) => {
                        m.len() == 1 && (m.contains_key("upsert") || m.contains_key("remove"))
                    }
                    _ => false,
                };
                if op {
                    operation_out(item)
                } else {
                    message_out(item)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn langchain_input_becomes_the_reducers_operations() {
        let ai = operation(json!({
            "type": "ai", "content": [{"type": "text", "text": "a"}, "b"], "id": "m1",
            "tool_calls": [{"name": "f", "args": {"x": 1}, "id": "c1", "type": "tool_call"}],
            "additional_kwargs": {}, "response_metadata": {}, "name": null,
        }));
        assert_eq!(
            ai,
            json!({ "upsert": { "role": "assistant", "content": "ab", "id": "m1",
                    "tool_calls": [{"name": "f", "arguments": {"x": 1}, "id": "c1"}] } })
        );
        assert_eq!(
            operation(json!({"role": "human", "content": null})),
            json!({ "upsert": { "role": "user", "content": "" } })
        );
        assert_eq!(
            operation(json!({"type": "remove", "id": "m1"})),
            json!({ "remove": "m1" })
        );
        assert_eq!(
            operation(json!({"type": "remove", "id": REMOVE_ALL})),
            json!("remove_all")
        );
        // An image block is not text: left for the decoder to refuse.
        let image = json!([{"type": "image_url", "image_url": {"url": "x"}}]);
        assert_eq!(
            operation(json!({"type": "human", "content": image.clone()})),
            json!({ "upsert": { "role": "user", "content": image } })
        );
    }

    #[test]
    fn state_messages_go_out_in_langchain_shape() {
        let mut ai = json!({ "id": "m1", "role": "assistant", "content": "",
                             "tool_calls": [{"id": "c1", "name": "f", "arguments": {"x": 1}}] });
        message_out(&mut ai);
        assert_eq!(
            ai,
            json!({ "id": "m1", "type": "ai", "content": "", "name": null,
                    "additional_kwargs": {}, "response_metadata": {"finish_reason": "tool_calls"},
                    "tool_calls": [{"id": "c1", "name": "f", "args": {"x": 1}, "type": "tool_call"}],
                    "invalid_tool_calls": [], "usage_metadata": null })
        );
        let mut other = json!({ "role": "robot", "content": "x" });
        message_out(&mut other);
        assert_eq!(other, json!({ "role": "robot", "content": "x" }));
        let mut ops = json!({ "log": [{"upsert": {"role": "user", "content": "hi"}},
                                      {"remove": "m0"}, "remove_all"] });
        untyped_output(&mut ops);
        assert_eq!(ops["log"][0]["type"], "human");
        assert_eq!(ops["log"][1]["type"], "remove");
        assert_eq!(ops["log"][1]["id"], "m0");
        assert_eq!(ops["log"][2], json!("remove_all"));
    }
}
