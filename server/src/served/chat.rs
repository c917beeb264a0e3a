//! Chat messages in the shape LangGraph's clients send and read: a `messages`
//! channel takes plain messages (`{"type": "human", "content": ".."}` or
//! `{"role": "user", ..}`, a bare string for a user message) as well as the
//! reducer's own operations, and gives each message a `type` beside its `role`.

use serde_json::{Map, Value, json};
use stategraph::GraphState;

/// LangGraph's message `type` for a role, and back.
const TYPES: &[(&str, &str)] = &[
    ("user", "human"),
    ("assistant", "ai"),
    ("system", "system"),
    ("tool", "tool"),
];

fn is_messages(reducer: &str) -> bool {
    reducer == "messages"
}

/// One wire item of a `messages` channel as a reducer operation.
fn operation(item: Value) -> Value {
    match item {
        Value::String(s) if s == "remove_all" => Value::String(s),
        Value::String(text) => json!({ "upsert": { "role": "user", "content": text } }),
        Value::Object(mut m) if !m.contains_key("upsert") && !m.contains_key("remove") => {
            if !m.contains_key("role")
                && let Some(t) = m.get("type").and_then(Value::as_str)
                && let Some((role, _)) = TYPES.iter().find(|(_, ty)| *ty == t)
            {
                m.insert("role".into(), json!(role));
            }
            m.remove("type");
            json!({ "upsert": Value::Object(m) })
        }
        other => other,
    }
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

/// Adds LangGraph's `type` to each message of the `messages` channels of a state.
pub(crate) fn output<S: GraphState>(values: &mut Value) {
    let Value::Object(map) = values else {
        return;
    };
    for ch in S::CHANNELS.iter().filter(|c| is_messages(c.reducer)) {
        if let Some(Value::Array(items)) = map.get_mut(ch.name) {
            for item in items.iter_mut().filter_map(Value::as_object_mut) {
                add_type(item);
            }
        }
    }
}

fn add_type(m: &mut Map<String, Value>) {
    if m.contains_key("type") {
        return;
    }
    if let Some(r) = m.get("role").and_then(Value::as_str)
        && let Some((_, ty)) = TYPES.iter().find(|(role, _)| *role == r)
    {
        m.insert("type".into(), json!(ty));
    }
}
