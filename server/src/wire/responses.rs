//! What the API answers, as LangGraph Platform's clients read it: one type per
//! shape, serialized as is and described in the OpenAPI document by the same
//! definition.

use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::clock::time;
use crate::db::{RunRow, ThreadRow};

/// A thread: its metadata, status, last values and pending interrupts.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Thread {
    pub(crate) thread_id: String,
    #[schema(format = DateTime)]
    pub(crate) created_at: String,
    #[schema(format = DateTime)]
    pub(crate) updated_at: String,
    #[schema(value_type = Object)]
    pub(crate) metadata: Map<String, Value>,
    /// `idle`, `busy`, `interrupted` or `error`.
    pub(crate) status: String,
    /// The state's values after the last run or update (`null` before any).
    #[schema(value_type = Option<Object>)]
    pub(crate) values: Value,
    /// Pending interrupts by the node that raised them.
    pub(crate) interrupts: Map<String, Value>,
    /// Its time to live, with `?include=ttl` (`null`: kept for ever).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) ttl: Option<Option<super::ThreadTtlInfo>>,
}

impl From<&ThreadRow> for Thread {
    fn from(t: &ThreadRow) -> Self {
        let mut interrupts = Map::new();
        for i in t.interrupts.as_array().into_iter().flatten() {
            let node = i.get("node").and_then(Value::as_str).unwrap_or("");
            if let Value::Array(list) = interrupts
                .entry(node.to_string())
                .or_insert_with(|| Value::Array(Vec::new()))
            {
                list.push(i.clone());
            }
        }
        Thread {
            thread_id: t.thread_id.clone(),
            created_at: time(t.created_at),
            updated_at: time(t.updated_at),
            metadata: t.metadata.clone(),
            status: t.status.as_str().to_string(),
            values: t.values.clone(),
            interrupts,
            ttl: None,
        }
    }
}

/// A run: its thread, assistant, status and the request it was created with.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Run {
    pub(crate) run_id: String,
    pub(crate) thread_id: String,
    pub(crate) assistant_id: String,
    #[schema(format = DateTime)]
    pub(crate) created_at: String,
    #[schema(format = DateTime)]
    pub(crate) updated_at: String,
    /// `pending`, `running`, `success`, `error`, `timeout` or `interrupted`.
    pub(crate) status: String,
    #[schema(value_type = Object)]
    pub(crate) metadata: Map<String, Value>,
    /// `reject`, `interrupt`, `rollback` or `enqueue`.
    pub(crate) multitask_strategy: String,
    /// The stored request (input, command, stream modes, config).
    #[schema(value_type = Object)]
    pub(crate) kwargs: Value,
    /// `interrupt` or `rollback` once a cancel was asked for.
    pub(crate) cancel_requested: Option<String>,
}

impl From<&RunRow> for Run {
    fn from(r: &RunRow) -> Self {
        Run {
            run_id: r.run_id.clone(),
            thread_id: r.thread_id.clone(),
            assistant_id: r.assistant_id.clone(),
            created_at: time(r.created_at),
            updated_at: time(r.updated_at),
            status: r.status.as_str().to_string(),
            metadata: r.metadata.clone(),
            multitask_strategy: r.multitask_strategy.clone(),
            kwargs: r.kwargs.clone(),
            cancel_requested: r.cancel.clone(),
        }
    }
}

/// A checkpoint's address.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub(crate) struct Checkpoint {
    pub(crate) thread_id: String,
    pub(crate) checkpoint_ns: String,
    pub(crate) checkpoint_id: Option<String>,
    /// Always `null`: namespaces are in `checkpoint_ns`.
    #[schema(value_type = Option<Object>)]
    pub(crate) checkpoint_map: Option<Value>,
}

impl From<&stategraph::checkpoint::CheckpointConfig> for Checkpoint {
    fn from(c: &stategraph::checkpoint::CheckpointConfig) -> Self {
        Checkpoint {
            thread_id: c.thread_id.clone(),
            checkpoint_ns: c.checkpoint_ns.clone(),
            checkpoint_id: c.checkpoint_id.clone(),
            checkpoint_map: None,
        }
    }
}

/// A thread's state at a checkpoint (`ThreadState`); a subgraph's, inside a task.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ThreadState {
    /// The state's values (messages in LangChain's shape).
    #[schema(value_type = Object)]
    pub(crate) values: Value,
    /// The nodes that run next.
    pub(crate) next: Vec<String>,
    pub(crate) tasks: Vec<ThreadTask>,
    #[schema(value_type = Option<Object>)]
    pub(crate) metadata: Value,
    pub(crate) created_at: Option<String>,
    pub(crate) checkpoint: Checkpoint,
    pub(crate) parent_checkpoint: Option<Checkpoint>,
    /// The top-level state's checkpoint id again, as older clients read it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) checkpoint_id: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) parent_checkpoint_id: Option<Option<String>>,
    pub(crate) interrupts: Vec<Interrupt>,
    /// Deferred nodes waiting for the other branches (top level only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) deferred: Option<Vec<String>>,
}

/// A task of a state: a node that runs next, with its error, interrupts and, for a
/// subgraph, the subgraph's own state.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ThreadTask {
    pub(crate) id: String,
    pub(crate) name: String,
    /// Always empty.
    pub(crate) path: Vec<String>,
    pub(crate) error: Option<String>,
    pub(crate) interrupts: Vec<Interrupt>,
    /// Always `null`.
    #[schema(value_type = Option<Object>)]
    pub(crate) checkpoint: Option<Value>,
    #[schema(no_recursion)]
    pub(crate) state: Option<Box<ThreadState>>,
    /// Always `null`.
    #[schema(value_type = Option<Object>)]
    pub(crate) result: Option<Value>,
}

/// A pending interrupt: what a node asked, and where.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub(crate) struct Interrupt {
    #[schema(value_type = Object)]
    pub(crate) value: Value,
    pub(crate) id: String,
    pub(crate) node: String,
    /// The subgraph namespace it was raised in (absent at the top level).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) ns: Option<String>,
}

impl From<&stategraph::Interrupt> for Interrupt {
    fn from(i: &stategraph::Interrupt) -> Self {
        Interrupt {
            value: i.value.clone(),
            id: i.id.clone(),
            node: i.node.clone(),
            ns: (!i.ns.is_empty()).then(|| i.ns.clone()),
        }
    }
}

/// What `POST /threads/{id}/state` answers: the checkpoint it saved.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct StateUpdated {
    pub(crate) checkpoint: Checkpoint,
    pub(crate) configurable: Configurable,
}

/// A checkpoint's config in LangGraph's `configurable` shape.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Configurable {
    pub(crate) thread_id: String,
    pub(crate) checkpoint_ns: String,
    pub(crate) checkpoint_id: Option<String>,
}

impl From<&stategraph::checkpoint::CheckpointConfig> for StateUpdated {
    fn from(c: &stategraph::checkpoint::CheckpointConfig) -> Self {
        StateUpdated {
            checkpoint: c.into(),
            configurable: Configurable {
                thread_id: c.thread_id.clone(),
                checkpoint_ns: c.checkpoint_ns.clone(),
                checkpoint_id: c.checkpoint_id.clone(),
            },
        }
    }
}

/// An assistant: a served graph under its name (a system assistant), or one made
/// through the API with its own configuration, context and versions.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub(crate) struct Assistant {
    pub(crate) assistant_id: String,
    pub(crate) graph_id: String,
    pub(crate) name: String,
    pub(crate) description: Option<String>,
    #[schema(value_type = Object)]
    pub(crate) config: Map<String, Value>,
    #[schema(value_type = Object)]
    pub(crate) context: Map<String, Value>,
    #[schema(value_type = Object)]
    pub(crate) metadata: Map<String, Value>,
    pub(crate) version: u32,
    #[schema(format = DateTime)]
    pub(crate) created_at: String,
    #[schema(format = DateTime)]
    pub(crate) updated_at: String,
}

/// A graph in LangGraph's drawable form.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct GraphDrawing {
    pub(crate) nodes: Vec<DrawnNode>,
    pub(crate) edges: Vec<DrawnEdge>,
    /// Changes when the graph's shape does.
    pub(crate) version: String,
}

/// A node of a drawing.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct DrawnNode {
    pub(crate) id: String,
    /// `schema` for `__start__`/`__end__`, `runnable` for a node.
    #[serde(rename = "type")]
    pub(crate) kind: String,
    pub(crate) data: String,
    /// `{"defer": true}` for a deferred node.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub(crate) metadata: Option<Value>,
    /// A subgraph node's own drawing.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(no_recursion)]
    pub(crate) subgraph: Option<Box<GraphDrawing>>,
}

/// An edge of a drawing.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct DrawnEdge {
    pub(crate) source: String,
    pub(crate) target: String,
    pub(crate) conditional: bool,
    /// The nodes a join edge waits for.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) join: Vec<String>,
}

/// A graph's JSON Schemas.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub(crate) struct GraphSchemas {
    pub(crate) graph_id: String,
    /// Every channel optional, no other key.
    #[schema(value_type = Object)]
    pub(crate) input_schema: Value,
    #[schema(value_type = Object)]
    pub(crate) output_schema: Value,
    #[schema(value_type = Object)]
    pub(crate) state_schema: Value,
    /// Always `null`: `config.configurable` is free-form.
    #[schema(value_type = Option<Object>)]
    pub(crate) config_schema: Option<Value>,
    /// The run context's schema, for a graph served with a context type.
    #[schema(value_type = Option<Object>)]
    pub(crate) context_schema: Option<Value>,
}

/// A subgraph of an assistant's graph, as `/assistants/{id}/subgraphs` lists it: its
/// schemas are not described (a subgraph's state is a Rust type of its own, with no
/// JSON Schema required of it), so each is `null`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct SubgraphSchemas {
    /// The graph the subgraph belongs to.
    pub(crate) graph_id: String,
    #[schema(value_type = Option<Object>)]
    pub(crate) input_schema: Option<Value>,
    #[schema(value_type = Option<Object>)]
    pub(crate) output_schema: Option<Value>,
    #[schema(value_type = Option<Object>)]
    pub(crate) state_schema: Option<Value>,
    #[schema(value_type = Option<Object>)]
    pub(crate) config_schema: Option<Value>,
    #[schema(value_type = Option<Object>)]
    pub(crate) context_schema: Option<Value>,
}

/// A store item.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Item {
    pub(crate) namespace: Vec<String>,
    pub(crate) key: String,
    #[schema(value_type = Object)]
    pub(crate) value: Value,
    #[schema(format = DateTime)]
    pub(crate) created_at: String,
    #[schema(format = DateTime)]
    pub(crate) updated_at: String,
    /// Its similarity to a search's `query`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) score: Option<f64>,
}

impl Item {
    pub(crate) fn of(item: &stategraph::store::Item, score: Option<f64>) -> Self {
        let time = |t: std::time::SystemTime| humantime::format_rfc3339_millis(t).to_string();
        Item {
            namespace: item.namespace.clone(),
            key: item.key.clone(),
            value: item.value.clone(),
            created_at: time(item.created_at),
            updated_at: time(item.updated_at),
            score,
        }
    }
}

/// `POST /store/items/search`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct SearchItems {
    pub(crate) items: Vec<Item>,
}

/// `POST /store/namespaces`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Namespaces {
    pub(crate) namespaces: Vec<Vec<String>>,
}

/// `GET /ok`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Health {
    pub(crate) ok: bool,
}

/// `GET /info`: what this server is and serves.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Info {
    pub(crate) version: String,
    /// Optional capabilities, as LangGraph Platform lists them.
    #[schema(value_type = Object)]
    pub(crate) flags: Map<String, Value>,
}

impl From<&crate::db::AssistantRow> for Assistant {
    fn from(a: &crate::db::AssistantRow) -> Self {
        Self {
            assistant_id: a.assistant_id.clone(),
            graph_id: a.graph_id.clone(),
            name: a.name.clone(),
            description: a.description.clone(),
            config: a.config.clone(),
            context: a.context.clone(),
            metadata: a.metadata.clone(),
            version: u32::try_from(a.version).unwrap_or(1),
            created_at: time(a.created_at),
            updated_at: time(a.updated_at),
        }
    }
}
