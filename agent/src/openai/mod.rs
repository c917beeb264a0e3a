//! [`OpenAiModel`]: a [`ChatModel`] speaking the OpenAI chat completions API
//! (`POST {base}/chat/completions`), which OpenAI and most local model servers
//! offer — vLLM, Ollama (`http://localhost:11434/v1`), llama.cpp's server
//! (`http://localhost:8080/v1`), LM Studio.
//!
//! ```no_run
//! use futures::StreamExt;
//! use stategraph::Message;
//! use stategraph_agent::{ChatModel, ChatRequest, OpenAiModel};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! // A local Ollama server needs no API key.
//! let model = OpenAiModel::new("llama3.2")
//!     .base_url("http://localhost:11434/v1")
//!     .temperature(0.2);
//! let request = ChatRequest::new(vec![Message::user("Name three rivers.")]);
//!
//! // The whole reply at once…
//! let reply = model.invoke(&request).await?;
//! println!("{}", reply.content);
//!
//! // …or piece by piece as it is written.
//! let mut chunks = model.stream(&request);
//! while let Some(chunk) = chunks.next().await {
//!     print!("{}", chunk?.content);
//! }
//! # Ok(())
//! # }
//! ```
//!
//! # Configuration from the environment
//!
//! [`OpenAiModel::from_env`] reads:
//!
//! | variable          | meaning                                    | when unset                |
//! |-------------------|--------------------------------------------|---------------------------|
//! | `OPENAI_MODEL`    | the model to ask (`gpt-4o-mini`, `llama3.2`) | an error                |
//! | `OPENAI_BASE_URL` | the API's base URL, ending in `/v1`        | `https://api.openai.com/v1` |
//! | `OPENAI_API_KEY`  | sent as `Authorization: Bearer …`          | no header; an error for the default OpenAI URL |
//!
//! # Failures and retries
//!
//! HTTP 429 and 5xx answers and refused connections are retried
//! ([`max_retries`](OpenAiModel::max_retries) times, waiting as the server's
//! `Retry-After` asks or with a doubling backoff), but only before the reply has
//! started: a stream that breaks off after its first chunk is an error, not
//! started again. Other error statuses (401 for a wrong key, 404 for a wrong URL
//! or model) are [`ModelError::Status`] at once, quoting the server's message.

mod http;
mod sse;
mod stream;
mod wire;

use std::fmt;
use std::time::Duration;

use wire::Settings;

#[cfg(doc)]
use crate::model::{ChatModel, ModelError};

/// OpenAI's API, the base URL when none is given.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// A chat model behind an OpenAI-compatible chat completions endpoint.
///
/// Built with [`new`](OpenAiModel::new) and builder methods, or from the
/// environment with [`from_env`](OpenAiModel::from_env); cheap to clone (clones
/// share one connection pool). See the [module docs](self) for an example.
#[derive(Clone)]
pub struct OpenAiModel {
    settings: Settings,
    base_url: String,
    api_key: Option<String>,
    timeout: Duration,
    max_retries: u32,
    retry_backoff: Duration,
    /// The HTTP client, or why it could not be set up (reported by each call).
    client: Result<reqwest::Client, String>,
}

/// Why [`OpenAiModel::from_env`] found no usable configuration.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OpenAiEnvError {
    /// A needed variable is not set (or is empty).
    #[error("the environment variable {variable} is not set: {hint}")]
    Missing {
        /// The variable.
        variable: &'static str,
        /// What to set it to.
        hint: &'static str,
    },
    /// A variable's value is not valid Unicode.
    #[error("the environment variable {variable} is not valid unicode: set it to plain text")]
    NotUnicode {
        /// The variable.
        variable: &'static str,
    },
}

impl OpenAiModel {
    /// The model `model` (as the server names it: `gpt-4o-mini`, `llama3.2`, …) at
    /// [`DEFAULT_BASE_URL`], without an API key, a 600 s timeout and 2 retries.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            settings: Settings {
                model: model.into(),
                ..Settings::default()
            },
            base_url: DEFAULT_BASE_URL.to_owned(),
            api_key: None,
            timeout: Duration::from_secs(600),
            max_retries: 2,
            retry_backoff: Duration::from_millis(500),
            client: reqwest::Client::builder()
                .build()
                .map_err(|e| format!("could not set up the HTTP client: {e}")),
        }
    }

    /// The model named by `OPENAI_MODEL` at `OPENAI_BASE_URL` (default
    /// [`DEFAULT_BASE_URL`]) with the key `OPENAI_API_KEY` (optional, except for
    /// OpenAI's own URL). Empty variables count as unset.
    ///
    /// # Errors
    /// [`OpenAiEnvError::Missing`] naming the variable to set;
    /// [`OpenAiEnvError::NotUnicode`] for a value that is not text.
    pub fn from_env() -> Result<Self, OpenAiEnvError> {
        Self::from_vars(|name| std::env::var_os(name))
    }

    fn from_vars(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Result<Self, OpenAiEnvError> {
        let read = |variable: &'static str| match var(variable) {
            None => Ok(None),
            Some(value) => match value.into_string() {
                Ok(value) if value.trim().is_empty() => Ok(None),
                Ok(value) => Ok(Some(value.trim().to_owned())),
                Err(_) => Err(OpenAiEnvError::NotUnicode { variable }),
            },
        };
        let model = read("OPENAI_MODEL")?.ok_or(OpenAiEnvError::Missing {
            variable: "OPENAI_MODEL",
            hint: "set it to the model to ask, e.g. gpt-4o-mini, or llama3.2 on Ollama",
        })?;
        let base_url = read("OPENAI_BASE_URL")?;
        let api_key = read("OPENAI_API_KEY")?;
        let openai = base_url
            .as_deref()
            .is_none_or(|url| url.trim_end_matches('/') == DEFAULT_BASE_URL);
        if openai && api_key.is_none() {
            return Err(OpenAiEnvError::Missing {
                variable: "OPENAI_API_KEY",
                hint: "set it to your OpenAI API key, or set OPENAI_BASE_URL to a server that needs none (e.g. http://localhost:11434/v1 for Ollama)",
            });
        }
        let mut model = Self::new(model);
        if let Some(url) = base_url {
            model = model.base_url(url);
        }
        if let Some(key) = api_key {
            model = model.api_key(key);
        }
        Ok(model)
    }

    /// The API's base URL, up to and including the version (`…/v1`); requests go
    /// to `{base}/chat/completions`.
    #[must_use]
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = url.into();
        self
    }

    /// The API key, sent as `Authorization: Bearer {key}` (no header without one).
    #[must_use]
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// The sampling temperature (the server's default when not set).
    #[must_use]
    pub fn temperature(mut self, temperature: f32) -> Self {
        self.settings.temperature = Some(temperature);
        self
    }

    /// The most tokens a reply may have, sent as `max_tokens` (the server's
    /// default when not set).
    #[must_use]
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.settings.max_tokens = Some(max_tokens);
        self
    }

    /// How long to wait: for a whole reply ([`invoke`](ChatModel::invoke)); for
    /// the first answer and then between two pieces of a streamed reply
    /// ([`stream`](ChatModel::stream)). Default 600 s.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How often an HTTP 429 or 5xx answer or a refused connection is retried
    /// before the error is returned. Default 2.
    #[must_use]
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.max_retries = retries;
        self
    }

    /// The wait before the first retry when the server does not say how long to
    /// wait; it doubles with each retry, up to 8 s. Default 500 ms.
    #[must_use]
    pub fn retry_backoff(mut self, backoff: Duration) -> Self {
        self.retry_backoff = backoff;
        self
    }

    /// The model's name, as sent.
    pub fn model(&self) -> &str {
        &self.settings.model
    }

    /// The URL requests are POSTed to: `{base}/chat/completions`.
    pub fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.base_url.trim_end_matches('/'))
    }
}

impl fmt::Debug for OpenAiModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiModel")
            .field("model", &self.settings.model)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("temperature", &self.settings.temperature)
            .field("max_tokens", &self.settings.max_tokens)
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::ffi::OsString;

    fn from(vars: &[(&str, &str)]) -> Result<OpenAiModel, OpenAiEnvError> {
        let vars: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), OsString::from(*v)))
            .collect();
        OpenAiModel::from_vars(|name| vars.get(name).cloned())
    }

    #[test]
    fn from_env_names_the_missing_variable() {
        let err = from(&[]).unwrap_err();
        assert!(err.to_string().contains("OPENAI_MODEL"), "{err}");
        let err = from(&[("OPENAI_MODEL", "gpt-4o-mini")]).unwrap_err();
        assert!(err.to_string().contains("OPENAI_API_KEY"), "{err}");
        let err = from(&[("OPENAI_MODEL", " "), ("OPENAI_API_KEY", "k")]).unwrap_err();
        assert!(err.to_string().contains("OPENAI_MODEL"), "{err}");
    }

    #[test]
    fn from_env_reads_url_key_and_model() {
        let m = from(&[("OPENAI_MODEL", "gpt-4o-mini"), ("OPENAI_API_KEY", "sk-1")]).unwrap();
        assert_eq!(m.model(), "gpt-4o-mini");
        assert_eq!(m.endpoint(), "https://api.openai.com/v1/chat/completions");
        assert_eq!(m.api_key.as_deref(), Some("sk-1"));

        // A local server needs no key.
        let m = from(&[
            ("OPENAI_MODEL", "llama3.2"),
            ("OPENAI_BASE_URL", "http://localhost:11434/v1/"),
        ])
        .unwrap();
        assert_eq!(m.endpoint(), "http://localhost:11434/v1/chat/completions");
        assert_eq!(m.api_key, None);
    }

    #[cfg(unix)]
    #[test]
    fn from_env_rejects_a_value_that_is_not_text() {
        use std::os::unix::ffi::OsStringExt;
        let err = OpenAiModel::from_vars(|name| {
            (name == "OPENAI_MODEL").then(|| OsString::from_vec(vec![0xff]))
        })
        .unwrap_err();
        assert_eq!(
            err,
            OpenAiEnvError::NotUnicode {
                variable: "OPENAI_MODEL"
            }
        );
    }

    #[test]
    fn debug_output_hides_the_api_key() {
        let m = OpenAiModel::new("m").api_key("sk-secret");
        let text = format!("{m:?}");
        assert!(!text.contains("sk-secret"), "{text}");
        assert!(text.contains("<redacted>"), "{text}");
    }
}
