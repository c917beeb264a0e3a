//! Sending a request: the POST, retries of overloaded or unreachable servers with
//! backoff, and HTTP failures turned into [`ModelError`]s.

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::Value;

use super::OpenAiModel;
use super::wire::{error_in, excerpt};
use crate::model::ModelError;

/// The longest wait a `Retry-After` header is obeyed for.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);
/// The longest wait between two attempts the exponential backoff reaches.
const MAX_BACKOFF: Duration = Duration::from_secs(8);

impl OpenAiModel {
    /// POSTs `body` to the endpoint until it answers with a success status, retrying
    /// HTTP 429, 5xx and connect errors up to `max_retries` times.
    ///
    /// A streamed request (`stream`) has no overall time limit (a long reply may
    /// take minutes to stream); its headers must arrive within the timeout.
    pub(super) async fn send(
        &self,
        body: &Value,
        stream: bool,
    ) -> Result<reqwest::Response, ModelError> {
        let client = self
            .client
            .as_ref()
            .map_err(|message| ModelError::Transport {
                url: self.endpoint(),
                message: message.clone(),
            })?;
        let url = self.endpoint();
        let mut retry = 0;
        loop {
            let mut request = client.post(&url).json(body);
            if let Some(key) = &self.api_key {
                request = request.bearer_auth(key);
            }
            let sent = if stream {
                match tokio::time::timeout(self.timeout, request.send()).await {
                    Ok(sent) => sent,
                    Err(_) => return Err(self.timed_out()),
                }
            } else {
                request.timeout(self.timeout).send().await
            };
            match sent {
                Ok(response) if response.status().is_success() => return Ok(response),
                Ok(response) => {
                    let status = response.status();
                    if retryable(status) && retry < self.max_retries {
                        let wait =
                            retry_after(response.headers()).unwrap_or_else(|| self.backoff(retry));
                        drop(response);
                        tokio::time::sleep(wait).await;
                        retry += 1;
                        continue;
                    }
                    let text = tokio::time::timeout(self.timeout, response.text())
                        .await
                        .ok()
                        .and_then(Result::ok)
                        .unwrap_or_default();
                    return Err(status_error(&url, status, &text, retry));
                }
                Err(e) if e.is_connect() && retry < self.max_retries => {
                    tokio::time::sleep(self.backoff(retry)).await;
                    retry += 1;
                }
                Err(e) => return Err(self.transport(&e)),
            }
        }
    }

    /// The wait before retry `retry` (0 for the first): the base, doubled each time.
    fn backoff(&self, retry: u32) -> Duration {
        let factor = 1u32.checked_shl(retry.min(16)).unwrap_or(u32::MAX);
        self.retry_backoff
            .saturating_mul(factor)
            .min(MAX_BACKOFF.max(self.retry_backoff))
    }

    /// A failed send or read, as a transport error naming every cause.
    pub(super) fn transport(&self, e: &reqwest::Error) -> ModelError {
        if e.is_timeout() {
            return self.timed_out();
        }
        let mut message = e.to_string();
        let mut source = std::error::Error::source(e);
        while let Some(cause) = source {
            message.push_str(": ");
            message.push_str(&cause.to_string());
            source = cause.source();
        }
        ModelError::Transport {
            url: self.endpoint(),
            message,
        }
    }

    /// No answer within the timeout.
    pub(super) fn timed_out(&self) -> ModelError {
        ModelError::Transport {
            url: self.endpoint(),
            message: format!(
                "no answer within {:?} (raise the limit with OpenAiModel::timeout)",
                self.timeout
            ),
        }
    }
}

fn retryable(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error()
}

/// The wait a server asks for: `retry-after-ms` (OpenAI) or `Retry-After` in
/// seconds (an HTTP date is not read), capped at [`MAX_RETRY_AFTER`].
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let header = |name| headers.get(name)?.to_str().ok()?.trim().parse::<f64>().ok();
    let wait = header("retry-after-ms")
        .map(|ms| ms / 1000.0)
        .or_else(|| header("retry-after"))?;
    if !wait.is_finite() || wait < 0.0 {
        return None;
    }
    Some(Duration::from_secs_f64(
        wait.min(MAX_RETRY_AFTER.as_secs_f64()),
    ))
}

/// An error status as [`ModelError::Status`]: the server's error message (or the
/// start of its body) and what to check.
fn status_error(url: &str, status: StatusCode, text: &str, retries: u32) -> ModelError {
    let mut body = serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|v| {
            error_in(&v)
                .and_then(|e| e.get("message"))
                .and_then(Value::as_str)
                .map(excerpt)
        })
        .unwrap_or_else(|| match excerpt(text) {
            e if e.is_empty() => "(empty body)".to_owned(),
            e => e,
        });
    let hint = match status {
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
            " (check the API key: OpenAiModel::api_key or OPENAI_API_KEY)"
        }
        StatusCode::NOT_FOUND => {
            " (check the base URL, which ends in /v1 for most servers, and the model name)"
        }
        _ => "",
    };
    body.push_str(hint);
    if retries > 0 {
        body.push_str(&format!(" (gave up after {} attempts)", retries + 1));
    }
    ModelError::Status {
        url: url.to_owned(),
        status: status.as_u16(),
        body,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn retry_after_reads_seconds_and_milliseconds_and_is_capped() {
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h), None);
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after", HeaderValue::from_static("86400"));
        assert_eq!(retry_after(&h), Some(MAX_RETRY_AFTER));
        h.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(250)));
        let mut h = HeaderMap::new();
        h.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&h), None);
    }

    #[test]
    fn backoff_doubles_up_to_a_cap() {
        let m = OpenAiModel::new("m").retry_backoff(Duration::from_millis(500));
        let waits: Vec<_> = (0..6).map(|r| m.backoff(r).as_millis()).collect();
        assert_eq!(waits, [500, 1000, 2000, 4000, 8000, 8000]);
        assert_eq!(m.backoff(u32::MAX), MAX_BACKOFF);
    }

    #[test]
    fn status_errors_quote_the_servers_message_and_say_what_to_check() {
        let err = status_error(
            "u",
            StatusCode::UNAUTHORIZED,
            r#"{"error":{"message":"Incorrect API key provided"}}"#,
            0,
        );
        let text = err.to_string();
        assert!(text.contains("HTTP 401"), "{text}");
        assert!(text.contains("Incorrect API key provided"), "{text}");
        assert!(text.contains("check the API key"), "{text}");
        let vllm = r#"{"object":"error","message":"The model `x` does not exist.","code":404}"#;
        let text = status_error("u", StatusCode::NOT_FOUND, vllm, 0).to_string();
        assert!(
            text.contains(": The model `x` does not exist. (check the base URL"),
            "{text}"
        );
        let err = status_error("u", StatusCode::BAD_GATEWAY, "<html>down</html>", 2);
        let text = err.to_string();
        assert!(text.contains("<html>down</html>"), "{text}");
        assert!(text.contains("gave up after 3 attempts"), "{text}");
    }
}
