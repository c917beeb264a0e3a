//! Typed request parts whose errors are API errors: a JSON body, the query string,
//! yes/no flags, page bounds.

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// Whether reading a body failed because it stopped arriving (the body deadline).
fn timed_out(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut at = Some(e);
    while let Some(e) = at {
        if e.is::<tower_http::timeout::TimeoutError>() {
            return true;
        }
        at = e.source();
    }
    false
}

/// A JSON body whose errors are API errors: malformed JSON is a 400 saying where,
/// a body of the wrong shape a 422 naming the field, an oversize body a 413. An
/// empty body is the type's default.
pub(crate) struct Body<T>(pub(crate) T);

impl<T: DeserializeOwned + Default, S: Send + Sync> FromRequest<S> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = axum::body::Bytes::from_request(req, state)
            .await
            .map_err(|e| {
                if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    ApiError::new(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        "the request body is larger than this server accepts",
                    )
                } else if timed_out(&e) {
                    ApiError::new(
                        StatusCode::REQUEST_TIMEOUT,
                        "the request body stopped arriving: send it without pausing",
                    )
                } else {
                    ApiError::bad_request(format!("cannot read the request body: {e}"))
                }
            })?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Body(T::default()));
        }
        let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
            ApiError::bad_request(format!("the request body is not valid JSON: {e}"))
        })?;
        if value.is_null() {
            return Ok(Body(T::default()));
        }
        // JSON can only carry a NUL as `\u0000`: look for the text before walking.
        if bytes.windows(6).any(|w| w == b"\\u0000")
            && let Some(path) = nul_at(&value, "$")
        {
            return Err(ApiError::invalid(path, NUL));
        }
        crate::error::decode_at(value, "$").map(Body)
    }
}

/// Why a NUL character is refused wherever it comes in (body, query, path).
pub(super) const NUL: &str = "a NUL character (\\u0000) cannot be stored (PostgreSQL refuses it in text and JSON): remove it";

/// The path of the first string or key in `value` holding a NUL character.
fn nul_at(value: &serde_json::Value, at: &str) -> Option<String> {
    use serde_json::Value;
    match value {
        Value::String(s) => s.contains('\0').then(|| at.to_string()),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, v)| nul_at(v, &format!("{at}[{i}]"))),
        Value::Object(map) => map.iter().find_map(|(k, v)| {
            let here = format!("{at}.{k}");
            if k.contains('\0') {
                Some(here)
            } else {
                nul_at(v, &here)
            }
        }),
        _ => None,
    }
}

/// Query-string parameters whose errors are API errors, as [`Body`]'s are: a
/// parameter of the wrong type or an unknown value is a 422 naming it
/// (`query.limit`), in JSON.
pub(crate) struct Params<T>(pub(crate) T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Params<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let query = parts.uri.query().unwrap_or_default();
        if let Some((key, _)) = form_urlencoded::parse(query.as_bytes())
            .find(|(k, v)| k.contains('\0') || v.contains('\0'))
        {
            return Err(ApiError::invalid(format!("query.{key}"), NUL));
        }
        let pairs = serde_urlencoded::Deserializer::new(form_urlencoded::parse(query.as_bytes()));
        serde_path_to_error::deserialize(pairs)
            .map(Params)
            .map_err(|e| {
                let path = e.path().to_string();
                let path = if path == "." {
                    "query".to_string()
                } else {
                    format!("query.{path}")
                };
                ApiError::invalid(path, e.into_inner().to_string())
            })
    }
}

/// A yes/no query parameter as clients send it: `true`/`false` in any case, or
/// `1`/`0` (the JS SDK sends numbers, Python's `True`). For
/// `#[serde(default, deserialize_with = "flag")]` fields.
pub(crate) fn flag<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    use serde::de::{Deserialize, Error, Unexpected};
    let text = String::deserialize(d)?;
    match text.to_ascii_lowercase().as_str() {
        "true" | "1" => Ok(Some(true)),
        "false" | "0" => Ok(Some(false)),
        _ => Err(D::Error::invalid_value(
            Unexpected::Str(&text),
            &"true, false, 1 or 0",
        )),
    }
}

/// A page bound from a request: at most 1000 items.
pub(crate) fn page(limit: Option<usize>, offset: Option<usize>, default: usize) -> (usize, usize) {
    (limit.unwrap_or(default).min(1000), offset.unwrap_or(0))
}
