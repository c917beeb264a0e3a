//! The chat completions wire format: the request body built from a
//! [`ChatRequest`], and replies — whole (`choices[0].message`) or streamed
//! (`choices[0].delta`) — read into [`Message`]s and [`MessageChunk`]s.
//!
//! Reading is lenient where servers differ (content as text or as parts, tool
//! arguments as JSON text or as an object, a streamed tool call without an
//! `index`) and strict where a wrong guess would corrupt the reply (arguments that
//! are not JSON, a reply without choices).

use serde::Deserialize;
use serde_json::{Map, Value, json};
use stategraph::{Message, MessageChunk, Role, ToolCall, ToolCallChunk};

use crate::model::{ChatRequest, ModelError, new_message_id};

/// How many characters of a server's text an error quotes.
const EXCERPT_CHARS: usize = 300;

/// The generation settings sent with every request.
#[derive(Clone, Debug, Default)]
pub(super) struct Settings {
    pub(super) model: String,
    pub(super) temperature: Option<f32>,
    pub(super) max_tokens: Option<u32>,
}

/// The JSON body of a `POST {base}/chat/completions`.
pub(super) fn request_body(settings: &Settings, request: &ChatRequest, stream: bool) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(settings.model));
    body.insert(
        "messages".into(),
        request.messages.iter().map(wire_message).collect(),
    );
    if !request.tools.is_empty() {
        let tools = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    },
                })
            })
            .collect();
        body.insert("tools".into(), tools);
    }
    if let Some(t) = settings.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(n) = settings.max_tokens {
        body.insert("max_tokens".into(), json!(n));
    }
    if stream {
        body.insert("stream".into(), json!(true));
    }
    Value::Object(body)
}

fn wire_message(m: &Message) -> Value {
    let role = match m.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    };
    let mut out = Map::new();
    out.insert("role".into(), json!(role));
    if m.role == Role::Assistant && !m.tool_calls.is_empty() {
        // A message that only calls tools has `content: null` on the wire.
        let content = if m.content.is_empty() {
            Value::Null
        } else {
            json!(m.content)
        };
        out.insert("content".into(), content);
        let calls = m
            .tool_calls
            .iter()
            .map(|c| {
                json!({
                    "id": c.id,
                    "type": "function",
                    "function": { "name": c.name, "arguments": c.arguments.to_string() },
                })
            })
            .collect();
        out.insert("tool_calls".into(), calls);
    } else {
        out.insert("content".into(), json!(m.content));
    }
    if let Some(id) = &m.tool_call_id {
        out.insert("tool_call_id".into(), json!(id));
    }
    Value::Object(out)
}

#[derive(Deserialize)]
struct Completion {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    choices: Vec<Choice>,
}

#[derive(Deserialize)]
struct Choice {
    message: WireMessage,
}

#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: Option<Content>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCall>>,
}

/// Message text: a string, or (some servers) a list of typed parts.
#[derive(Deserialize)]
#[serde(untagged)]
enum Content {
    Text(String),
    Parts(Vec<Part>),
}

#[derive(Deserialize)]
struct Part {
    #[serde(default)]
    text: Option<String>,
}

impl Content {
    fn into_text(self) -> String {
        match self {
            Content::Text(text) => text,
            Content::Parts(parts) => parts.into_iter().filter_map(|p| p.text).collect(),
        }
    }
}

#[derive(Deserialize)]
struct WireToolCall {
    #[serde(default)]
    id: Option<String>,
    function: WireFunction,
}

#[derive(Deserialize)]
struct WireFunction {
    name: String,
    #[serde(default)]
    arguments: Option<Value>,
}

/// A whole (non-streamed) reply as a message: `choices[0].message`, with the
/// reply's `id` (or a fresh one).
pub(super) fn parse_completion(url: &str, text: &str) -> Result<Message, ModelError> {
    let malformed = |e: serde_json::Error| ModelError::Malformed {
        url: url.to_owned(),
        message: format!(
            "the reply is not chat completion JSON ({e}); it starts: {}",
            excerpt(text)
        ),
    };
    let value: Value = serde_json::from_str(text).map_err(malformed)?;
    if let Some(error) = error_in(&value) {
        return Err(error_object(url, error));
    }
    let completion: Completion = serde_json::from_value(value).map_err(malformed)?;
    let Some(choice) = completion.choices.into_iter().next() else {
        return Err(ModelError::Malformed {
            url: url.to_owned(),
            message: format!("the reply has no choices; it starts: {}", excerpt(text)),
        });
    };
    let id = non_empty(completion.id).unwrap_or_else(new_message_id);
    let content = choice
        .message
        .content
        .map(Content::into_text)
        .unwrap_or_default();
    let mut tool_calls = Vec::new();
    for call in choice.message.tool_calls.unwrap_or_default() {
        let id = non_empty(call.id).unwrap_or_else(|| format!("call-{}", uuid::Uuid::new_v4()));
        let arguments = match call.function.arguments {
            Some(Value::String(text)) if text.trim().is_empty() => Value::Object(Map::new()),
            Some(Value::String(text)) => {
                serde_json::from_str(&text).map_err(|e| ModelError::Malformed {
                    url: url.to_owned(),
                    message: format!(
                        "the arguments of tool call `{id}` ({}) are not JSON ({e}): {}",
                        call.function.name,
                        excerpt(&text)
                    ),
                })?
            }
            Some(Value::Null) | None => Value::Object(Map::new()),
            Some(value) => value,
        };
        tool_calls.push(ToolCall {
            id,
            name: call.function.name,
            arguments,
        });
    }
    Ok(Message::assistant(content)
        .with_id(id)
        .with_tool_calls(tool_calls))
}

#[derive(Deserialize)]
struct StreamChunk {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    choices: Vec<StreamChoice>,
}

#[derive(Deserialize)]
struct StreamChoice {
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<Content>,
    #[serde(default)]
    tool_calls: Option<Vec<DeltaToolCall>>,
}

#[derive(Deserialize)]
struct DeltaToolCall {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<DeltaFunction>,
}

#[derive(Deserialize)]
struct DeltaFunction {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<Value>,
}

/// Reads the events of one streamed reply into chunks of one message.
#[derive(Debug, Default)]
pub(super) struct Decoder {
    url: String,
    /// The reply's message id, fixed by its first event.
    id: Option<String>,
    /// The `(index, id)` of every tool call seen, for servers that leave out `index`.
    calls: Vec<(usize, Option<String>)>,
    /// `data: [DONE]` was read.
    pub(super) done: bool,
    /// A choice had a `finish_reason`.
    pub(super) finished: bool,
}

impl Decoder {
    pub(super) fn new(url: &str) -> Self {
        Self {
            url: url.to_owned(),
            ..Self::default()
        }
    }

    /// The chunk one event's `data` carries (`None` for the end marker and for
    /// deltas that carry nothing).
    pub(super) fn event(&mut self, data: &str) -> Result<Option<MessageChunk>, ModelError> {
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(None);
        }
        let malformed = |e: serde_json::Error| ModelError::Malformed {
            url: self.url.clone(),
            message: format!(
                "a streamed event is not a completion chunk ({e}): {}",
                excerpt(data)
            ),
        };
        let value: Value = serde_json::from_str(data).map_err(malformed)?;
        if let Some(error) = error_in(&value) {
            return Err(error_object(&self.url, error));
        }
        let chunk: StreamChunk = serde_json::from_value(value).map_err(malformed)?;
        let id = self
            .id
            .get_or_insert_with(|| non_empty(chunk.id).unwrap_or_else(new_message_id))
            .clone();
        let Some(choice) = chunk.choices.into_iter().next() else {
            return Ok(None);
        };
        if choice.finish_reason.is_some() {
            self.finished = true;
        }
        let Some(delta) = choice.delta else {
            return Ok(None);
        };
        let content = delta.content.map(Content::into_text).unwrap_or_default();
        let mut tool_calls = Vec::new();
        for piece in delta.tool_calls.unwrap_or_default() {
            let index = self.index_of(piece.index, piece.id.as_deref());
            let (name, arguments) = match piece.function {
                Some(f) => (
                    f.name,
                    match f.arguments {
                        Some(Value::String(text)) => text,
                        Some(Value::Null) | None => String::new(),
                        Some(value) => value.to_string(),
                    },
                ),
                None => (None, String::new()),
            };
            let piece = ToolCallChunk {
                index,
                id: non_empty(piece.id),
                name: non_empty(name),
                arguments,
            };
            if piece.id.is_some() || piece.name.is_some() || !piece.arguments.is_empty() {
                tool_calls.push(piece);
            }
        }
        if content.is_empty() && tool_calls.is_empty() {
            return Ok(None);
        }
        Ok(Some(MessageChunk {
            tool_calls,
            ..MessageChunk::text(id, content)
        }))
    }

    /// The call a streamed piece belongs to: its `index`; without one, a new call
    /// when it brings a new id, else the last call.
    fn index_of(&mut self, index: Option<usize>, id: Option<&str>) -> usize {
        let index = match index {
            Some(index) => index,
            None => {
                let known = id.and_then(|id| {
                    self.calls
                        .iter()
                        .find(|(_, seen)| seen.as_deref() == Some(id))
                        .map(|(index, _)| *index)
                });
                match (known, id) {
                    (Some(index), _) => index,
                    (None, Some(_)) => self.calls.iter().map(|(i, _)| i + 1).max().unwrap_or(0),
                    (None, None) => self.calls.last().map_or(0, |(i, _)| *i),
                }
            }
        };
        match self.calls.iter_mut().find(|(i, _)| *i == index) {
            Some((_, seen)) => {
                if seen.is_none() {
                    *seen = id.map(str::to_owned);
                }
            }
            None => self.calls.push((index, id.map(str::to_owned))),
        }
        index
    }
}

/// The error a server sent in place of a reply: `{"error": {...}}` (OpenAI,
/// Ollama, vLLM's streams) or `{"object": "error", "message": ...}` (vLLM).
pub(super) fn error_in(value: &Value) -> Option<&Value> {
    match value.get("error") {
        Some(error) if !error.is_null() => Some(error),
        _ => (value.get("object").and_then(Value::as_str) == Some("error")).then_some(value),
    }
}

/// An error object a server sent in place of a reply: a status error
/// when it names an HTTP status, else a malformed reply quoting its message.
pub(super) fn error_object(url: &str, error: &Value) -> ModelError {
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .map_or_else(|| error.to_string(), str::to_owned);
    let status = ["code", "status"]
        .iter()
        .filter_map(|key| error.get(*key))
        .find_map(|v| {
            v.as_u64()
                .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        })
        .filter(|code| (400..600).contains(code))
        .and_then(|code| u16::try_from(code).ok());
    match status {
        Some(status) => ModelError::Status {
            url: url.to_owned(),
            status,
            body: excerpt(&message),
        },
        None => ModelError::Malformed {
            url: url.to_owned(),
            message: format!("the server reported an error: {}", excerpt(&message)),
        },
    }
}

/// The start of `text`, on one line, for an error message.
pub(super) fn excerpt(text: &str) -> String {
    let text = text.trim();
    let mut out: String = text
        .chars()
        .take(EXCERPT_CHARS)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if text.chars().nth(EXCERPT_CHARS).is_some() {
        out.push('…');
    }
    out
}

fn non_empty(s: Option<String>) -> Option<String> {
    s.filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(events: &[Value]) -> Vec<MessageChunk> {
        let mut d = Decoder::new("u");
        events
            .iter()
            .filter_map(|e| d.event(&e.to_string()).unwrap())
            .collect()
    }

    #[test]
    fn streamed_calls_without_index_are_told_apart_by_id() {
        let call = |id: Option<&str>, name: Option<&str>, args: &str| {
            json!({"choices": [{"delta": {"tool_calls": [
                {"id": id, "function": {"name": name, "arguments": args}}
            ]}}]})
        };
        let chunks = decode(&[
            call(Some("a"), Some("one"), "{\"x\":"),
            call(None, None, "1}"),
            call(Some("b"), Some("two"), "{}"),
        ]);
        let indexes: Vec<_> = chunks.iter().map(|c| c.tool_calls[0].index).collect();
        assert_eq!(indexes, [0, 0, 1]);
    }

    #[test]
    fn an_error_object_with_a_status_code_is_a_status_error() {
        let err = error_object("u", &json!({"message": "slow down", "code": 429}));
        assert!(
            matches!(err, ModelError::Status { status: 429, ref body, .. } if body == "slow down"),
            "{err}"
        );
        let err = error_object("u", &json!({"message": "oops", "type": "server_error"}));
        assert!(matches!(err, ModelError::Malformed { .. }), "{err}");
        assert!(err.to_string().contains("oops"), "{err}");
    }

    #[test]
    fn vllm_top_level_error_objects_are_errors_not_empty_events() {
        let data = r#"{"object":"error","message":"maximum context length is 4096","type":"BadRequestError","code":400}"#;
        let err = Decoder::new("u").event(data).unwrap_err();
        assert!(
            matches!(err, ModelError::Status { status: 400, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("maximum context length"), "{err}");
        let err = parse_completion("u", data).unwrap_err();
        assert!(
            matches!(err, ModelError::Status { status: 400, .. }),
            "{err}"
        );
        // `"error": null` is no error.
        let ok = r#"{"id":"x","error":null,"choices":[{"delta":{"content":"a"}}]}"#;
        assert!(Decoder::new("u").event(ok).unwrap().is_some());
    }

    #[test]
    fn excerpts_are_short_and_on_one_line() {
        let long = format!("a\nb{}", "x".repeat(1000));
        let e = excerpt(&long);
        assert!(e.starts_with("a b"), "{e}");
        assert_eq!(e.chars().count(), EXCERPT_CHARS + 1);
        assert!(e.ends_with('…'));
        assert_eq!(excerpt("  short  "), "short");
    }

    #[test]
    fn content_given_as_parts_is_joined() {
        let m = parse_completion(
            "u",
            r#"{"choices":[{"message":{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}}]}"#,
        )
        .unwrap();
        assert_eq!(m.content, "ab");
        assert!(m.id.is_some_and(|id| id.starts_with("msg-")));
    }
}
