//! What `#[tool]` expansions name. Not public API: no semver guarantees.
//!
//! Each parameter type is asserted to be `Deserialize` and `JsonSchema` by naming
//! `<Type as ToolArgument>::CHECKED` at the user's type (one short error each,
//! with our message, and no "required by a bound" note); every other use
//! goes through [`Probe`], whose methods fall back to harmless defaults for a type
//! without those impls, so a missing impl is never reported twice. The fallbacks
//! never run: a program that would reach them does not compile.

use std::marker::PhantomData;

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Deserializer;
use serde::de::{DeserializeOwned, Error as _};
use serde_json::{Map, Value};

pub use schemars;
pub use serde;
pub use serde_json;
pub use stategraph::BoxFuture;

pub use crate::tool::{Tool, ToolError, ToolOutput, ToolSpec};

/// A tool argument type the model's JSON can be decoded into.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool argument: it does not implement `serde::Deserialize`",
    label = "the model's JSON arguments are decoded into this type",
    note = "derive `serde::Deserialize` for it (and for every type inside it)"
)]
pub trait ToolArgument {
    /// Named by the expansion, so a type without the impl is an error on it.
    const CHECKED: () = ();
}

#[diagnostic::do_not_recommend]
impl<T: DeserializeOwned> ToolArgument for T {}

/// A tool argument type the model can be told the shape of.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool argument: it does not implement `schemars::JsonSchema`",
    label = "the model is told this type's shape as a JSON Schema",
    note = "derive `schemars::JsonSchema` for it (and for every type inside it), with `schemars = \"1\"` in your dependencies"
)]
pub trait DescribedArgument {
    /// Named by the expansion, so a type without the impl is an error on it.
    const CHECKED: () = ();
}

#[diagnostic::do_not_recommend]
impl<T: JsonSchema> DescribedArgument for T {}

/// Selects, by autoref, the real implementation for types with the impls and a
/// fallback for the rest: `(&Probe::<T>::new()).decode(d)`.
pub struct Probe<T>(PhantomData<fn() -> T>);

impl<T> Probe<T> {
    /// A probe for `T`.
    pub const fn new() -> Self {
        Self(PhantomData)
    }
}

impl<T> Default for Probe<T> {
    fn default() -> Self {
        Self::new()
    }
}

const NOT_DECODABLE: &str = "this argument's type does not implement `Deserialize`";

/// Decoding for types that are `Deserialize`.
pub trait DecodeArg<T> {
    /// Decodes one argument.
    ///
    /// # Errors
    /// The deserializer's error.
    fn decode<'de, D: Deserializer<'de>>(&self, deserializer: D) -> Result<T, D::Error>;

    /// Decodes the whole arguments object (the `#[args]` form).
    ///
    /// # Errors
    /// [`ToolError::BadArguments`] when `arguments` do not decode as `T`.
    fn decode_arguments(&self, tool: &str, arguments: Value) -> Result<T, ToolError>;
}

impl<T: DeserializeOwned> DecodeArg<T> for Probe<T> {
    fn decode<'de, D: Deserializer<'de>>(&self, deserializer: D) -> Result<T, D::Error> {
        T::deserialize(deserializer)
    }

    fn decode_arguments(&self, tool: &str, arguments: Value) -> Result<T, ToolError> {
        decode_arguments(tool, arguments)
    }
}

/// The fallback of [`DecodeArg`] (never runs; see the module docs).
pub trait DecodeArgFallback<T> {
    /// Always an error.
    ///
    /// # Errors
    /// Always.
    fn decode<'de, D: Deserializer<'de>>(&self, deserializer: D) -> Result<T, D::Error>;

    /// Always an error.
    ///
    /// # Errors
    /// Always.
    fn decode_arguments(&self, tool: &str, arguments: Value) -> Result<T, ToolError>;
}

impl<T> DecodeArgFallback<T> for &Probe<T> {
    fn decode<'de, D: Deserializer<'de>>(&self, _: D) -> Result<T, D::Error> {
        Err(D::Error::custom(NOT_DECODABLE))
    }

    fn decode_arguments(&self, tool: &str, _: Value) -> Result<T, ToolError> {
        Err(ToolError::BadArguments {
            tool: tool.to_string(),
            message: NOT_DECODABLE.to_string(),
        })
    }
}

/// Schemas for types that are `JsonSchema`.
pub trait DescribeArg {
    /// One argument's schema; named types it uses are added to `generator`.
    fn describe(&self, generator: &mut SchemaGenerator) -> Schema;

    /// The whole arguments object's schema (the `#[args]` form).
    fn arguments_schema(&self) -> Value;
}

impl<T: JsonSchema> DescribeArg for Probe<T> {
    fn describe(&self, generator: &mut SchemaGenerator) -> Schema {
        generator.subschema_for::<T>()
    }

    fn arguments_schema(&self) -> Value {
        let mut schema = schema_generator().into_root_schema_for::<T>();
        // The Rust type's name tells the model nothing.
        schema.remove("title");
        schema.to_value()
    }
}

/// The fallback of [`DescribeArg`] (never runs; see the module docs).
pub trait DescribeArgFallback {
    /// Any value.
    fn describe(&self, generator: &mut SchemaGenerator) -> Schema;

    /// Any value.
    fn arguments_schema(&self) -> Value;
}

impl<T> DescribeArgFallback for &Probe<T> {
    fn describe(&self, _: &mut SchemaGenerator) -> Schema {
        Schema::from(true)
    }

    fn arguments_schema(&self) -> Value {
        Value::Bool(true)
    }
}

/// The generator for tool schemas: draft 2020-12, named types inlined (only
/// recursive ones stay in `$defs`), no `$schema` key.
pub fn schema_generator() -> SchemaGenerator {
    SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator()
}

/// The arguments object schema of the per-parameter form, built one property at a
/// time.
#[derive(Default)]
pub struct ObjectSchema {
    properties: Map<String, Value>,
    required: Vec<Value>,
}

impl ObjectSchema {
    /// No properties yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the property `name`.
    pub fn property(
        &mut self,
        name: &str,
        mut schema: Schema,
        required: bool,
        description: Option<&str>,
    ) {
        if let Some(text) = description {
            schema.insert("description".to_string(), Value::from(text));
        }
        self.properties.insert(name.to_string(), schema.to_value());
        if required {
            self.required.push(Value::from(name));
        }
    }

    /// The object schema, with the definitions of recursive types under `$defs`
    /// (where the generator's `#/$defs/..` references point).
    pub fn finish(self, mut generator: SchemaGenerator) -> Value {
        let mut object = Map::new();
        object.insert("type".into(), Value::from("object"));
        object.insert("properties".into(), Value::Object(self.properties));
        object.insert("required".into(), Value::Array(self.required));
        object.insert("additionalProperties".into(), Value::Bool(false));
        let definitions = generator.take_definitions(true);
        if !definitions.is_empty() {
            object.insert("$defs".into(), Value::Object(definitions));
        }
        Value::Object(object)
    }
}

/// Decodes a tool's arguments object; `null` counts as `{}` (some models send it
/// for tools without parameters).
///
/// # Errors
/// [`ToolError::BadArguments`] for arguments that are not an object, or with
/// serde's message prefixed with the path of the value that does not fit.
pub fn decode_arguments<A: DeserializeOwned>(tool: &str, arguments: Value) -> Result<A, ToolError> {
    let arguments = match arguments {
        Value::Null => Value::Object(Map::new()),
        Value::Object(map) => Value::Object(map),
        // serde would decode a struct from an array, by position.
        other => {
            let found = match other {
                Value::Bool(_) => "a boolean",
                Value::Number(_) => "a number",
                Value::String(_) => "a string",
                _ => "an array",
            };
            return Err(ToolError::BadArguments {
                tool: tool.to_string(),
                message: format!(
                    "the arguments must be a JSON object of named values, not {found}"
                ),
            });
        }
    };
    serde_path_to_error::deserialize(arguments).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let message = if path == "." {
            inner.to_string()
        } else {
            format!("`{path}`: {inner}")
        };
        ToolError::BadArguments {
            tool: tool.to_string(),
            message,
        }
    })
}

/// The tool's result as the text the model reads.
///
/// # Errors
/// [`ToolError::Failed`] when the output says the tool failed.
pub fn output<O: ToolOutput>(tool: &str, output: O) -> Result<String, ToolError> {
    output
        .into_tool_result()
        .map_err(|message| ToolError::Failed {
            tool: tool.to_string(),
            message,
        })
}
