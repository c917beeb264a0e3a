//! Tools a model may call: [`Tool`] (what `#[tool]` implements), its [`ToolSpec`]
//! (name, description, JSON Schema of the arguments), [`ToolError`], and [`Tools`],
//! the set an agent offers.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use stategraph::BoxFuture;

/// What a model is told about a tool: its name, what it does, and the JSON Schema
/// of its arguments (an object schema).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The name the model calls it by.
    pub name: String,
    /// What it does (from the doc comment with `#[tool]`).
    pub description: String,
    /// The JSON Schema of its arguments object.
    pub parameters: Value,
}

/// A tool: described by its [`ToolSpec`], called with the JSON arguments a model
/// wrote. `#[tool]` implements it for an `async fn`, decoding the arguments into
/// the function's typed parameters before it runs.
pub trait Tool: Send + Sync + 'static {
    /// Its name, description and argument schema.
    fn spec(&self) -> ToolSpec;

    /// Runs it with `arguments` (a JSON object); its result as the text the model
    /// reads.
    ///
    /// # Errors
    /// [`ToolError::BadArguments`] when `arguments` do not decode into the tool's
    /// parameters; [`ToolError::Failed`] when the tool itself fails.
    fn call(&self, arguments: Value) -> BoxFuture<'_, Result<String, ToolError>>;
}

/// Why a tool call did not produce a result. Its text is what the model reads in
/// the error tool message, so it says what to fix.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The arguments do not fit the tool's parameters.
    #[error(
        "invalid arguments for tool `{tool}`: {message}; call it again with arguments that match its schema"
    )]
    BadArguments {
        /// The tool.
        tool: String,
        /// What does not fit.
        message: String,
    },
    /// The tool ran and failed.
    #[error("tool `{tool}` failed: {message}")]
    Failed {
        /// The tool.
        tool: String,
        /// Its error.
        message: String,
    },
    /// No tool has the called name.
    #[error("there is no tool named `{tool}`; the tools are: {known}")]
    Unknown {
        /// The name called.
        tool: String,
        /// The names there are, comma-separated.
        known: String,
    },
}

/// The tools an agent offers, by name.
#[derive(Clone, Default)]
pub struct Tools {
    by_name: BTreeMap<String, Arc<dyn Tool>>,
}

impl Tools {
    /// No tools.
    pub fn new() -> Self {
        Self::default()
    }

    /// With `tool` added (replacing a tool of the same name).
    #[must_use]
    pub fn with(mut self, tool: impl Tool) -> Self {
        self.add(Arc::new(tool));
        self
    }

    /// Adds a shared tool (replacing a tool of the same name).
    pub fn add(&mut self, tool: Arc<dyn Tool>) {
        self.by_name.insert(tool.spec().name, tool);
    }

    /// The tool named `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.by_name.get(name)
    }

    /// Every tool's spec, by name.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.by_name.values().map(|t| t.spec()).collect()
    }

    /// The tools' names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.by_name.keys().map(String::as_str)
    }

    /// How many there are.
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// Calls the tool `name` with `arguments`.
    ///
    /// # Errors
    /// [`ToolError::Unknown`] for a name no tool has; otherwise the tool's error.
    pub async fn call(&self, name: &str, arguments: Value) -> Result<String, ToolError> {
        match self.by_name.get(name) {
            Some(tool) => tool.call(arguments).await,
            None => Err(ToolError::Unknown {
                tool: name.to_string(),
                known: self.names().collect::<Vec<_>>().join(", "),
            }),
        }
    }
}

impl fmt::Debug for Tools {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

/// What a `#[tool]` function may return: its result as the text the model reads.
///
/// | returned | the model reads |
/// |---|---|
/// | `String`, `&'static str` | the text |
/// | [`serde_json::Value`], [`Json<T>`] | the value's JSON text |
/// | `()` | `done` |
/// | `Result<T, E>` (`T: ToolOutput`, `E: Display`) | `T`'s text; for `Err`, the error's text in a [`ToolError::Failed`] |
///
/// ```
/// use stategraph_agent::{Json, ToolOutput};
///
/// #[derive(serde::Serialize)]
/// struct Forecast {
///     high: i32,
/// }
///
/// assert_eq!(Json(Forecast { high: 21 }).into_tool_result(), Ok(r#"{"high":21}"#.to_string()));
/// assert_eq!(().into_tool_result(), Ok("done".to_string()));
/// let failed: Result<String, std::fmt::Error> = Err(std::fmt::Error);
/// assert_eq!(failed.into_tool_result(), Err("an error occurred when formatting an argument".to_string()));
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tool output",
    label = "a tool returns the text the model reads",
    note = "return `String`, `&'static str`, `serde_json::Value`, `Json<T>` (any `T: Serialize`) or `()`, or a `Result<_, E>` of one of those with `E: Display`"
)]
pub trait ToolOutput {
    /// The text the model reads.
    ///
    /// # Errors
    /// The failure's message, when the tool failed (or its result cannot be
    /// written as text).
    fn into_tool_result(self) -> Result<String, String>;
}

impl ToolOutput for String {
    fn into_tool_result(self) -> Result<String, String> {
        Ok(self)
    }
}

impl ToolOutput for &'static str {
    fn into_tool_result(self) -> Result<String, String> {
        Ok(self.to_string())
    }
}

impl ToolOutput for Value {
    fn into_tool_result(self) -> Result<String, String> {
        Ok(self.to_string())
    }
}

impl ToolOutput for () {
    fn into_tool_result(self) -> Result<String, String> {
        Ok("done".to_string())
    }
}

impl<T: ToolOutput, E: fmt::Display> ToolOutput for Result<T, E> {
    fn into_tool_result(self) -> Result<String, String> {
        match self {
            Ok(output) => output.into_tool_result(),
            Err(error) => Err(error.to_string()),
        }
    }
}

/// A tool result the model reads as JSON: `Json(forecast)` for any
/// `T: Serialize`. See [`ToolOutput`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Json<T>(pub T);

impl<T: Serialize> ToolOutput for Json<T> {
    fn into_tool_result(self) -> Result<String, String> {
        serde_json::to_string(&self.0)
            .map_err(|e| format!("the result could not be written as JSON: {e}"))
    }
}
