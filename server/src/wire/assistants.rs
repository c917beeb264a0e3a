//! Requests that make and change assistants: `POST /assistants` ([`AssistantCreate`]),
//! `PATCH /assistants/{id}` ([`AssistantPatch`]), `POST /assistants/{id}/versions`
//! ([`AssistantVersions`]) and `/latest` ([`AssistantLatest`]).

use serde::Deserialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::runs::IfExists;

/// A new assistant: a served graph with its own configuration and context.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AssistantCreate {
    /// The served graph it runs.
    #[serde(default)]
    pub(crate) graph_id: String,
    /// Its id (a new UUID when absent).
    #[serde(default)]
    pub(crate) assistant_id: Option<String>,
    /// The run configuration its runs start from: `configurable`, `recursion_limit`,
    /// `max_concurrency`, `tags`, `metadata`, `run_name`.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub(crate) config: Option<Map<String, Value>>,
    /// The context its runs start from (decoded into the graph's context type).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub(crate) context: Option<Map<String, Value>>,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub(crate) metadata: Option<Map<String, Value>>,
    /// With `do_nothing`, an existing assistant of that id is returned.
    #[serde(default)]
    pub(crate) if_exists: Option<IfExists>,
    /// Its name (the graph's when absent).
    #[serde(default)]
    pub(crate) name: Option<String>,
    #[serde(default)]
    pub(crate) description: Option<String>,
}

/// A change to an assistant, made as its new version: each field given replaces the
/// current one; `metadata` is merged into it.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AssistantPatch {
    #[serde(default)]
    pub(crate) graph_id: Option<String>,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub(crate) config: Option<Map<String, Value>>,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub(crate) context: Option<Map<String, Value>>,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub(crate) metadata: Option<Map<String, Value>>,
    #[serde(default)]
    pub(crate) name: Option<String>,
    #[serde(default)]
    pub(crate) description: Option<String>,
}

/// `POST /assistants/{id}/versions`: an assistant's versions, newest first.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AssistantVersions {
    /// Metadata every returned version contains (key by key, values equal).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub(crate) metadata: Option<Map<String, Value>>,
    #[serde(default)]
    pub(crate) limit: Option<usize>,
    #[serde(default)]
    pub(crate) offset: Option<usize>,
}

/// `POST /assistants/{id}/latest`: which version becomes the current one.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AssistantLatest {
    #[serde(default)]
    pub(crate) version: Option<i32>,
}
