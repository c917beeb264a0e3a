//! Request bodies and response shapes of the API, as LangGraph Platform's clients
//! send and read them. Request envelopes accept fields they do not use (clients of
//! newer versions send more); the graph input inside them is decoded strictly.

use serde::Deserialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

mod assistants;
pub(crate) mod chat;
mod clock;
mod crons;
mod order;
mod responses;
mod retention;
mod runs;
mod state;

pub(crate) use assistants::{AssistantCreate, AssistantLatest, AssistantPatch, AssistantVersions};
pub(crate) use clock::time;
pub(crate) use crons::{CRON_FIELDS, Cron, CronCreate, CronPatch, CronSearch, CronSortBy};
pub(crate) use order::SortOrder;
pub(crate) use responses::{
    Assistant, Checkpoint, DrawnEdge, DrawnNode, GraphDrawing, GraphSchemas, Health, Info,
    Interrupt, Item, Namespaces, Run, SearchItems, StateUpdated, SubgraphSchemas, Thread,
    ThreadState, ThreadTask,
};
pub(crate) use retention::{PruneStrategy, Pruned, ThreadPrune, ThreadTtlInfo, TtlRequest};
pub(crate) use runs::{
    CancelAction, CheckpointRef, CommandRequest, DurabilityRequest, IfExists, IfNotExists,
    MultitaskStrategy, OnCompletion, OnDisconnect, RunConfigRequest, RunCreate, RunKwargs,
    checkpoint_id,
};
pub(crate) use state::thread_state;

/// `POST /threads`: every field the SDKs send, honoured or refused by name; any other
/// is a 422.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ThreadCreate {
    #[serde(default)]
    pub(crate) thread_id: Option<String>,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub(crate) metadata: Option<Map<String, Value>>,
    #[serde(default)]
    pub(crate) if_exists: Option<IfExists>,
    /// The graph the thread runs (bound in its metadata, as its first run would).
    #[serde(default)]
    pub(crate) graph_id: Option<String>,
    /// Not served: refused with a 422.
    #[serde(default)]
    pub(crate) supersteps: Option<Value>,
    /// How long after its last change the thread is swept, and how.
    #[serde(default)]
    pub(crate) ttl: Option<TtlRequest>,
}

/// `PATCH /threads/{id}`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ThreadPatch {
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub(crate) metadata: Option<Map<String, Value>>,
    /// How long after its last change the thread is swept, and how.
    #[serde(default)]
    pub(crate) ttl: Option<TtlRequest>,
}

/// `POST /threads/search` and `/threads/count`: every field is honoured, any other
/// is a 422.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ThreadSearch {
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub(crate) metadata: Option<Map<String, Value>>,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub(crate) values: Option<Map<String, Value>>,
    #[serde(default)]
    pub(crate) status: Option<String>,
    #[serde(default)]
    pub(crate) ids: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) sort_by: Option<ThreadSortBy>,
    #[serde(default)]
    pub(crate) sort_order: Option<SortOrder>,
    /// The fields of each thread to return (all when absent).
    #[serde(default)]
    pub(crate) select: Option<Vec<String>>,
    /// Aliases of paths into each thread (`values.messages[-1]`), returned under
    /// `extracted`.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub(crate) extract: Option<Map<String, Value>>,
    #[serde(default)]
    pub(crate) limit: Option<usize>,
    #[serde(default)]
    pub(crate) offset: Option<usize>,
}

/// `sort_by` of a thread search.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ThreadSortBy {
    ThreadId,
    Status,
    CreatedAt,
    UpdatedAt,
    /// A thread's state changes with its runs and updates: its `updated_at`.
    StateUpdatedAt,
}

/// The fields of a `Thread`, for `select`.
pub(crate) const THREAD_FIELDS: &[&str] = &[
    "thread_id",
    "created_at",
    "updated_at",
    "metadata",
    "config",
    "context",
    "status",
    "values",
    "interrupts",
];

/// The value at `path` in `root`: keys joined by dots, list indexes in brackets
/// (`values.messages[-1].content`; a negative index counts from the end).
pub(crate) fn extract(root: &Value, path: &str) -> Option<Value> {
    let mut at = root;
    for part in path.split('.') {
        let (key, indexes) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !key.is_empty() {
            at = at.get(key)?;
        }
        for index in indexes.split('[').filter(|s| !s.is_empty()) {
            let n: i64 = index.strip_suffix(']')?.parse().ok()?;
            let list = at.as_array()?;
            let len = i64::try_from(list.len()).ok()?;
            let i = if n < 0 { len + n } else { n };
            at = list.get(usize::try_from(i).ok()?)?;
        }
    }
    Some(at.clone())
}

/// `POST /threads/{id}/state`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct StateUpdate {
    #[serde(default)]
    pub(crate) values: Option<Value>,
    #[serde(default)]
    pub(crate) as_node: Option<String>,
    #[serde(default)]
    pub(crate) checkpoint_id: Option<String>,
    #[serde(default)]
    pub(crate) checkpoint: Option<CheckpointRef>,
}

/// `POST /threads/{id}/history`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct HistoryQuery {
    #[serde(default)]
    pub(crate) limit: Option<usize>,
    #[serde(default)]
    pub(crate) before: Option<Value>,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub(crate) metadata: Option<Map<String, Value>>,
    /// The fields of each state to return (all when absent).
    #[serde(default)]
    pub(crate) select: Option<Vec<String>>,
    /// The checkpoint to list (RemoteGraph sends `{thread_id}` always, and the id
    /// when its config names one): with an id, that checkpoint alone. A subgraph's
    /// namespace is not served (a 422).
    #[serde(default)]
    pub(crate) checkpoint: Option<HistoryCheckpoint>,
}

/// `checkpoint` of a history request.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct HistoryCheckpoint {
    #[serde(default)]
    pub(crate) thread_id: Option<String>,
    #[serde(default)]
    pub(crate) checkpoint_ns: Option<String>,
    #[serde(default)]
    pub(crate) checkpoint_id: Option<String>,
    #[serde(default)]
    pub(crate) checkpoint_map: Option<Value>,
}

/// The fields of a `ThreadState`, for `select`.
pub(crate) const STATE_FIELDS: &[&str] = &[
    "values",
    "next",
    "tasks",
    "checkpoint",
    "metadata",
    "created_at",
    "parent_checkpoint",
    "interrupts",
];

/// `POST /assistants/search` and `/assistants/count`: every field is honoured, any
/// other is a 422.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AssistantSearch {
    #[serde(default)]
    pub(crate) graph_id: Option<String>,
    #[serde(default)]
    pub(crate) name: Option<String>,
    /// Metadata the assistants contain (key by key, values equal).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub(crate) metadata: Option<Map<String, Value>>,
    #[serde(default)]
    pub(crate) sort_by: Option<AssistantSortBy>,
    #[serde(default)]
    pub(crate) sort_order: Option<SortOrder>,
    /// The fields of each assistant to return (all when absent).
    #[serde(default)]
    pub(crate) select: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) limit: Option<usize>,
    #[serde(default)]
    pub(crate) offset: Option<usize>,
}

/// `sort_by` of an assistant search.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum AssistantSortBy {
    AssistantId,
    GraphId,
    Name,
    CreatedAt,
    UpdatedAt,
}

/// The fields of an `Assistant`, for `select`.
pub(crate) const ASSISTANT_FIELDS: &[&str] = &[
    "assistant_id",
    "graph_id",
    "name",
    "description",
    "config",
    "context",
    "created_at",
    "updated_at",
    "metadata",
    "version",
];

/// The fields of a `Run`, for `select`.
pub(crate) const RUN_FIELDS: &[&str] = &[
    "run_id",
    "thread_id",
    "assistant_id",
    "created_at",
    "updated_at",
    "status",
    "metadata",
    "kwargs",
    "multitask_strategy",
    "cancel_reason",
];

/// Checks a `select` list against the fields of the object it picks from.
pub(crate) fn check_select(
    select: Option<Vec<String>>,
    known: &[&str],
    path: &str,
) -> Result<Option<Vec<String>>, crate::error::ApiError> {
    if let Some(bad) = select
        .iter()
        .flatten()
        .find(|f| !known.contains(&f.as_str()))
    {
        return Err(crate::error::ApiError::invalid(
            path,
            format!("unknown field `{bad}`; fields: {}", known.join(", ")),
        ));
    }
    Ok(select)
}

/// `item` with only the `select`ed fields (all of it without a selection).
pub(crate) fn pick<T: serde::Serialize>(item: &T, select: Option<&[String]>) -> Value {
    let value = serde_json::to_value(item).unwrap_or_default();
    match (select, value) {
        (Some(fields), Value::Object(mut all)) => Value::Object(
            fields
                .iter()
                .filter_map(|f| all.remove(f).map(|v| (f.clone(), v)))
                .collect(),
        ),
        (_, value) => value,
    }
}

/// Node names given as `"*"`, a name, or a list.
pub(crate) fn node_list(
    value: Option<&Value>,
    all: &[String],
    field: &str,
) -> Result<Vec<String>, crate::error::ApiError> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) if s == "*" => Ok(all.to_vec()),
        Some(Value::String(s)) => Ok(vec![s.clone()]),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str().map(str::to_string).ok_or_else(|| {
                    crate::error::ApiError::invalid(format!("$.{field}"), "expected node names")
                })
            })
            .collect(),
        Some(_) => Err(crate::error::ApiError::invalid(
            format!("$.{field}"),
            "expected \"*\", a node name or a list of them",
        )),
    }
}
