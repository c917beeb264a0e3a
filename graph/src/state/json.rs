//! A state and its updates as plain JSON objects (`{"field": value}`), built with the
//! channels' codecs: the wire form of a server's input and output, for states that
//! need not implement `Serialize`.

use serde_json::{Map, Value};

use super::channel::Persistence;
use super::codec::{CodecError, split_write};
use super::traits::GraphState;

/// A JSON input does not decode as an update of the state ([`update_from_json`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// The input is not a JSON object.
    #[error("the input is a JSON {found}, not an object: send `{{\"field\": value, ..}}`")]
    NotAnObject {
        /// The JSON type found: `null`, `boolean`, `number`, `string` or `array`.
        found: &'static str,
    },
    /// The input names a field the state does not have.
    #[error("the state has no field `{field}`; its fields are: {known}")]
    UnknownField {
        /// The name given.
        field: String,
        /// The state's fields that take JSON input, comma-separated.
        known: String,
    },
    /// A field's value does not decode as that field's update.
    #[error("invalid value at `{path}`: {message}")]
    Invalid {
        /// Where: `$.field`.
        path: String,
        /// Why.
        message: String,
    },
}

/// The state as a JSON object `{field: value}`, each value encoded with its channel's
/// codec; untracked channels (`#[channel(untracked)]`) are left out.
///
/// # Errors
/// [`CodecError`] when a value fails to serialize.
pub fn state_to_json<S: GraphState>(state: &S) -> Result<Value, CodecError> {
    let mut map = Map::with_capacity(S::CHANNELS.len());
    for info in S::CHANNELS {
        if let Some(value) = state.encode_channel(info.index)? {
            map.insert(info.name.to_string(), value);
        }
    }
    Ok(Value::Object(map))
}

/// Decodes the wire form of an input, `{"field": value, ..}`: each value is a write
/// through the field's reducer (the value a builder method like
/// `State::update().field(value)` takes; for an `append` field, the items to append).
/// Unknown fields are errors, never dropped.
///
/// ```
/// use stategraph::prelude::*;
/// use stategraph::{InputError, update_from_json};
///
/// #[derive(GraphState, Clone, Debug, Default)]
/// struct Chat {
///     topic: String,
///     #[reducer(append)]
///     log: Vec<String>,
/// }
///
/// let update = update_from_json::<Chat>(serde_json::json!({"topic": "tides", "log": ["hi"]}))?;
/// let mut state = Chat { log: vec!["start".into()], ..Chat::default() };
/// state.apply_writes(vec![stategraph::Write::new("input", update)])?;
/// assert_eq!(state.topic, "tides");
/// assert_eq!(state.log, ["start", "hi"]);
///
/// let err = update_from_json::<Chat>(serde_json::json!({"title": "x"})).unwrap_err();
/// assert!(matches!(err, InputError::UnknownField { .. }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`InputError`] when the input is not an object, names an unknown (or untracked)
/// field, or a value does not decode as its field's update.
pub fn update_from_json<S: GraphState>(value: Value) -> Result<S::Update, InputError> {
    let map = match value {
        Value::Object(map) => map,
        other => {
            return Err(InputError::NotAnObject {
                found: json_type(&other),
            });
        }
    };
    let mut stored = Map::with_capacity(map.len());
    for (field, value) in map {
        match S::CHANNELS.iter().find(|c| c.name == field) {
            None => {
                return Err(InputError::UnknownField {
                    field,
                    known: known_fields::<S>(),
                });
            }
            Some(info) if info.persistence == Persistence::Untracked => {
                return Err(InputError::Invalid {
                    path: format!("$.{field}"),
                    message: format!(
                        "field `{field}` is untracked (`#[channel(untracked)]`), so it has no JSON form; set it from code"
                    ),
                });
            }
            Some(_) => {
                let mut write = Map::with_capacity(1);
                write.insert("reduce".to_string(), value);
                stored.insert(field, Value::Object(write));
            }
        }
    }
    S::decode_update(Value::Object(stored)).map_err(|e| match e {
        CodecError::Decode {
            channel,
            type_name,
            source,
        } => InputError::Invalid {
            path: format!("$.{channel}"),
            message: format!("does not decode as an update of `{type_name}`: {source}"),
        },
        other => InputError::Invalid {
            path: "$".to_string(),
            message: other.to_string(),
        },
    })
}

/// The inverse of [`update_from_json`]: an update as `{"field": value}`. A write
/// replacing the value (`Overwrite`) gives its value like a reducer write does;
/// untracked channels are left out.
///
/// # Errors
/// [`CodecError`] when a value fails to serialize.
pub fn update_to_json<S: GraphState>(update: &S::Update) -> Result<Value, CodecError> {
    let Value::Object(stored) = S::encode_update(update)? else {
        return Err(CodecError::UpdateNotObject);
    };
    let mut map = Map::with_capacity(stored.len());
    for (field, write) in stored {
        let info = S::CHANNELS
            .iter()
            .find(|c| c.name == field)
            .ok_or_else(|| CodecError::UnknownUpdateChannel {
                name: field.clone(),
            })?;
        let (_, value) = split_write(write, info)?;
        map.insert(field, value);
    }
    Ok(Value::Object(map))
}

/// The tracked channels' names, comma-separated.
fn known_fields<S: GraphState>() -> String {
    S::CHANNELS
        .iter()
        .filter(|c| c.persistence == Persistence::Checkpointed)
        .map(|c| c.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The JSON type name of `value`.
fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}
