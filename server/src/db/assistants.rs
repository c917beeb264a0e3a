//! Assistants made through the API: a served graph with its own configuration,
//! context and metadata, versioned — every change is a new version, and any version
//! can be made the current one again. (The served graphs themselves are the system
//! assistants, made from code at start-up, not stored.)

use serde_json::{Map, Value};
use stategraph::BoxFuture;

use super::rows::DbResult;

/// A stored assistant, or one of its versions.
#[derive(Clone, Debug)]
pub(crate) struct AssistantRow {
    pub(crate) assistant_id: String,
    /// The served graph it runs.
    pub(crate) graph_id: String,
    pub(crate) name: String,
    pub(crate) description: Option<String>,
    /// The run configuration its runs start from (a run request's `config` shape).
    pub(crate) config: Map<String, Value>,
    /// The context its runs start from.
    pub(crate) context: Map<String, Value>,
    pub(crate) metadata: Map<String, Value>,
    /// Its current version (a version row: that version).
    pub(crate) version: i32,
    /// Milliseconds since the Unix epoch.
    pub(crate) created_at: i64,
    /// Milliseconds since the Unix epoch.
    pub(crate) updated_at: i64,
}

/// A change to an assistant: each field given replaces the current one (metadata
/// is merged into it).
#[derive(Clone, Debug, Default)]
pub(crate) struct AssistantChange {
    pub(crate) graph_id: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) config: Option<Map<String, Value>>,
    pub(crate) context: Option<Map<String, Value>>,
    pub(crate) metadata: Option<Map<String, Value>>,
}

impl AssistantChange {
    /// `current` with the change applied, as version `version`.
    pub(crate) fn apply(&self, current: &AssistantRow, version: i32, now: i64) -> AssistantRow {
        let mut next = current.clone();
        if let Some(g) = &self.graph_id {
            next.graph_id.clone_from(g);
        }
        if let Some(n) = &self.name {
            next.name.clone_from(n);
        }
        if let Some(d) = &self.description {
            next.description = Some(d.clone());
        }
        if let Some(c) = &self.config {
            next.config.clone_from(c);
        }
        if let Some(c) = &self.context {
            next.context.clone_from(c);
        }
        if let Some(m) = &self.metadata {
            next.metadata.extend(m.clone());
        }
        next.version = version;
        next.updated_at = now;
        next
    }
}

/// Stored assistants and their versions.
pub(crate) trait Assistants: Send + Sync + 'static {
    /// Stores a new assistant as its version 1; with `if_exists_do_nothing` an
    /// existing one is returned instead of a conflict.
    fn insert_assistant(
        &self,
        row: AssistantRow,
        if_exists_do_nothing: bool,
    ) -> BoxFuture<'_, DbResult<AssistantRow>>;
    /// The assistant, as its current version.
    fn get_assistant(&self, assistant_id: String) -> BoxFuture<'_, DbResult<Option<AssistantRow>>>;
    /// Applies `change` as a new version, made the current one.
    fn update_assistant(
        &self,
        assistant_id: String,
        change: AssistantChange,
    ) -> BoxFuture<'_, DbResult<Option<AssistantRow>>>;
    /// Deletes the assistant and its versions; whether it existed.
    fn delete_assistant(&self, assistant_id: String) -> BoxFuture<'_, DbResult<bool>>;
    /// Every stored assistant, as its current version.
    fn list_assistants(&self) -> BoxFuture<'_, DbResult<Vec<AssistantRow>>>;
    /// The assistant's versions, newest first (`None`: no such assistant).
    fn assistant_versions(
        &self,
        assistant_id: String,
    ) -> BoxFuture<'_, DbResult<Option<Vec<AssistantRow>>>>;
    /// Makes `version` the current one (`None`: no such assistant or version).
    fn set_latest_version(
        &self,
        assistant_id: String,
        version: i32,
    ) -> BoxFuture<'_, DbResult<Option<AssistantRow>>>;
}
