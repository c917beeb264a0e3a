//! Errors: what a request gets back ([`ApiError`], a status and a JSON body) and
//! what stops a server from starting ([`ServerError`]).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// A failed request: an HTTP status and a message, sent as `{"detail": message}`
/// (the shape LangGraph Platform's clients read), plus `errors` with a field path
/// for input that does not decode.
#[derive(Debug, thiserror::Error)]
#[error("{status}: {detail}")]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// What went wrong, and what to do about it.
    pub detail: String,
    /// For invalid input: `(path, message)` per problem (`$.field`).
    pub errors: Vec<(String, String)>,
    /// For a 429: seconds to wait before trying again.
    pub retry_after: Option<u64>,
}

impl ApiError {
    /// An error with `status` and `detail`.
    pub fn new(status: StatusCode, detail: impl Into<String>) -> Self {
        Self {
            status,
            detail: detail.into(),
            errors: Vec::new(),
            retry_after: None,
        }
    }

    /// 404: `what` does not exist.
    pub fn not_found(what: impl std::fmt::Display) -> Self {
        Self::new(StatusCode::NOT_FOUND, format!("{what} not found"))
    }

    /// 422 for input that does not decode, with the path of the offending field.
    pub fn invalid(path: impl Into<String>, message: impl Into<String>) -> Self {
        let (path, message) = (path.into(), message.into());
        Self {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            detail: format!("invalid input at {path}: {message}"),
            errors: vec![(path, message)],
            retry_after: None,
        }
    }

    /// 409: the request conflicts with the thread's or run's state.
    pub fn conflict(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, detail)
    }

    /// 400: a request that cannot be served as asked.
    pub fn bad_request(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, detail)
    }

    /// 429: too many requests; try again after `wait` (sent as `Retry-After`).
    pub fn too_many(detail: impl Into<String>, wait: std::time::Duration) -> Self {
        let mut e = Self::new(StatusCode::TOO_MANY_REQUESTS, detail);
        e.retry_after = Some(wait.as_secs().max(1));
        e
    }

    /// 500: the server failed (storage, a task); logged, and reported without internals
    /// beyond the message.
    pub fn internal(detail: impl std::fmt::Display) -> Self {
        tracing::error!(error = %detail, "request failed");
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, detail.to_string())
    }
}

/// Decodes `value` as a `T`; a 422 naming the field that does not decode, as a
/// path under `root` (`$` for a request body).
pub(crate) fn decode_at<T: serde::de::DeserializeOwned>(
    value: serde_json::Value,
    root: &str,
) -> Result<T, ApiError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let path = if path == "." {
            root.to_string()
        } else {
            format!("{root}.{path}")
        };
        ApiError::invalid(path, e.into_inner().to_string())
    })
}

/// An error and its causes, on one line.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

/// The body of every error answer.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub(crate) struct ErrorBody {
    /// What is wrong and how to fix it; for a 422, the first field named.
    pub(crate) detail: String,
    /// Each field that was refused (422s).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) errors: Vec<FieldError>,
}

/// A refused field: where it is in the request (`$.input.messages[0]`,
/// `query.limit`) and why.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub(crate) struct FieldError {
    pub(crate) path: String,
    pub(crate) message: String,
}

/// The error answers an operation may give, for the OpenAPI document.
pub(crate) struct Refusals;

impl utoipa::IntoResponses for Refusals {
    fn responses() -> std::collections::BTreeMap<
        String,
        utoipa::openapi::RefOr<utoipa::openapi::response::Response>,
    > {
        use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};
        [
            ("400", "The request is malformed (its JSON, a header)."),
            ("401", "An API key is required and none was given."),
            ("403", "The API key is wrong."),
            ("404", "What the path names does not exist."),
            (
                "409",
                "The request conflicts with the thread's state (an active run).",
            ),
            ("422", "A field is refused: `errors` names each."),
            (
                "429",
                "Too many requests: retry after `Retry-After` seconds.",
            ),
        ]
        .into_iter()
        .map(|(status, description)| {
            let content = ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("ErrorBody")))
                .build();
            let response = ResponseBuilder::new()
                .description(description)
                .content("application/json", content)
                .build();
            (status.to_string(), response.into())
        })
        .collect()
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            detail: self.detail,
            errors: self
                .errors
                .into_iter()
                .map(|(path, message)| FieldError { path, message })
                .collect(),
        };
        let mut response = (self.status, axum::Json(body)).into_response();
        if let Some(secs) = self.retry_after {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, secs.into());
        }
        response
    }
}

impl From<crate::db::DbError> for ApiError {
    fn from(e: crate::db::DbError) -> Self {
        match e {
            crate::db::DbError::Conflict(detail) => ApiError::conflict(detail),
            other => ApiError::internal(other),
        }
    }
}

/// Why a server did not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// Two graphs were registered under one name.
    #[error("two graphs are named `{0}`: give each `Server::graph` call its own name")]
    DuplicateGraph(String),
    /// No graph was registered.
    #[error("no graph to serve: add one with `Server::graph(name, graph)`")]
    NoGraphs,
    /// A graph did not compile.
    #[error("graph `{name}` does not compile")]
    Build {
        /// The graph's name.
        name: String,
        /// What is wrong with it.
        #[source]
        source: stategraph::BuildError,
    },
    /// The database could not be opened or prepared.
    #[error("cannot open the server's database")]
    Database(#[source] crate::db::DbError),
    /// The checkpoint saver or store could not be opened.
    #[error("cannot open the checkpoint saver")]
    Saver(#[source] stategraph::checkpoint::CheckpointError),
    /// The store could not be opened.
    #[error("cannot open the store")]
    Store(#[source] stategraph::store::StoreError),
    /// An origin given to [`Cors::origins`](crate::Cors::origins) is not one.
    #[error("invalid CORS origin `{origin}` ({reason}): give it as `scheme://host[:port]`")]
    Cors {
        /// The origin as given.
        origin: String,
        /// Why it was refused.
        reason: String,
    },
    /// The address could not be bound.
    #[error("cannot listen on {addr}")]
    Bind {
        /// The address.
        addr: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The HTTP server failed.
    #[error("the HTTP server failed")]
    Serve(#[source] std::io::Error),
    /// The webhook client could not be made (its TLS roots).
    #[error("cannot make the webhook client: {0}")]
    Webhooks(String),
}
