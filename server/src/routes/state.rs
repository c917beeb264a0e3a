//! A thread's state: read it (now, at a checkpoint, with subgraphs), write it
//! (`update_state`), list its history.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, RawQuery, State};
use serde::Deserialize;
use serde_json::{Map, Value};
use stategraph::checkpoint::ListOptions;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::threads::{ThreadPath, graph_of, thread};
use super::{Body, Params};
use crate::app::App;
use crate::db::ThreadStatus;
use crate::error::{ApiError, Refusals};
use crate::wire::{
    Checkpoint, HistoryQuery, STATE_FIELDS, StateUpdate, StateUpdated, ThreadState, check_select,
    pick,
};

pub(super) fn routes() -> OpenApiRouter<Arc<App>> {
    OpenApiRouter::new()
        .routes(routes!(state, update_state))
        .routes(routes!(state_at_body))
        .routes(routes!(state_at))
        .routes(routes!(history_get, history))
}

/// The state of a thread without checkpoints.
fn empty_state(thread_id: &str) -> ThreadState {
    ThreadState {
        values: Value::Object(Map::new()),
        next: Vec::new(),
        tasks: Vec::new(),
        metadata: Value::Object(Map::new()),
        created_at: None,
        checkpoint: Checkpoint {
            thread_id: thread_id.to_string(),
            checkpoint_ns: String::new(),
            checkpoint_id: None,
            checkpoint_map: None,
        },
        parent_checkpoint: None,
        checkpoint_id: Some(None),
        parent_checkpoint_id: Some(None),
        interrupts: Vec::new(),
        deferred: None,
    }
}

pub(super) async fn read_state(
    app: &App,
    id: &str,
    checkpoint: Option<String>,
    subgraphs: bool,
) -> Result<Json<ThreadState>, ApiError> {
    let t = thread(app, id).await?;
    let Some(graph) = graph_of(app, &t)? else {
        return Ok(Json(empty_state(id)));
    };
    let wanted = checkpoint.clone();
    match graph.state(id, checkpoint, subgraphs).await? {
        Some(s) => Ok(Json(s)),
        None if wanted.is_some() => Err(ApiError::not_found(format!(
            "checkpoint {} of thread {id}",
            wanted.unwrap_or_default()
        ))),
        None => Ok(Json(empty_state(id))),
    }
}

#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct StateParams {
    /// With each subgraph's own state inside its task.
    #[serde(default, deserialize_with = "super::flag")]
    subgraphs: Option<bool>,
}

/// `select` of a state read, once per field.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
struct SelectParam {
    /// A field of the state, or `values.<channel>` for one channel of its values.
    select: Option<Vec<String>>,
}

/// `select` of a state read: fields of `ThreadState`, or `values.<channel>`.
fn select_state(state: &ThreadState, select: &[String], at: &str) -> Result<Value, ApiError> {
    let whole = pick(state, None);
    if select.is_empty() {
        return Ok(whole);
    }
    let mut out = Map::new();
    let mut values = Map::new();
    for field in select {
        if let Some(channel) = field.strip_prefix("values.") {
            if let Some(v) = whole["values"].get(channel) {
                values.insert(channel.to_string(), v.clone());
            }
        } else if STATE_FIELDS.contains(&field.as_str()) {
            out.insert(field.clone(), whole[field.as_str()].clone());
        } else {
            return Err(ApiError::invalid(
                at,
                format!(
                    "unknown field `{field}`; fields: {}, or values.<channel>",
                    STATE_FIELDS.join(", ")
                ),
            ));
        }
    }
    if !values.is_empty() && !out.contains_key("values") {
        out.insert("values".into(), Value::Object(values));
    }
    Ok(Value::Object(out))
}

/// The `select` fields of a query string (`?select=a&select=b`).
fn selected(query: Option<&str>) -> Vec<String> {
    form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .filter(|(k, _)| k == "select")
        .map(|(_, v)| v.into_owned())
        .collect()
}

/// The thread's state now.
#[utoipa::path(get, path = "/threads/{thread_id}/state", tag = "state",
    params(ThreadPath, StateParams, SelectParam),
    responses((status = 200, description = "The state (the `select`ed fields).", body = ThreadState), Refusals))]
async fn state(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Params(p): Params<StateParams>,
    RawQuery(query): RawQuery,
) -> Result<Json<Value>, ApiError> {
    let Json(state) = read_state(&app, &id, None, p.subgraphs.unwrap_or(false)).await?;
    Ok(Json(select_state(
        &state,
        &selected(query.as_deref()),
        "query.select",
    )?))
}

/// The thread's state at a checkpoint.
#[utoipa::path(get, path = "/threads/{thread_id}/state/{checkpoint_id}", tag = "state",
    params(ThreadPath, ("checkpoint_id" = String, Path, description = "The checkpoint's id."), StateParams, SelectParam),
    responses((status = 200, description = "The state (the `select`ed fields).", body = ThreadState), Refusals))]
async fn state_at(
    State(app): State<Arc<App>>,
    Path((id, checkpoint_id)): Path<(String, String)>,
    Params(p): Params<StateParams>,
    RawQuery(query): RawQuery,
) -> Result<Json<Value>, ApiError> {
    let subgraphs = p.subgraphs.unwrap_or(false);
    let Json(state) = read_state(&app, &id, Some(checkpoint_id), subgraphs).await?;
    Ok(Json(select_state(
        &state,
        &selected(query.as_deref()),
        "query.select",
    )?))
}

/// `POST /threads/{id}/state/checkpoint`.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
struct StateAt {
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    checkpoint: Option<crate::wire::CheckpointRef>,
    #[serde(default)]
    subgraphs: Option<bool>,
    /// The fields to return: fields of the state, or `values.<channel>`.
    #[serde(default)]
    select: Option<Vec<String>>,
}

/// The thread's state at the checkpoint named in the body.
#[utoipa::path(post, path = "/threads/{thread_id}/state/checkpoint", tag = "state",
    params(ThreadPath), request_body = StateAt,
    responses((status = 200, description = "The state.", body = ThreadState), Refusals))]
async fn state_at_body(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Body(req): Body<StateAt>,
) -> Result<Json<Value>, ApiError> {
    let checkpoint = crate::wire::checkpoint_id(None, req.checkpoint.as_ref());
    let Json(state) = read_state(&app, &id, checkpoint, req.subgraphs.unwrap_or(false)).await?;
    let select = req.select.unwrap_or_default();
    Ok(Json(select_state(&state, &select, "$.select")?))
}

/// Writes values into the thread's state, as a node or as input, at a checkpoint.
#[utoipa::path(post, path = "/threads/{thread_id}/state", tag = "state",
    params(ThreadPath), request_body = StateUpdate,
    responses((status = 200, description = "The checkpoint saved.", body = StateUpdated), Refusals))]
async fn update_state(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Body(req): Body<StateUpdate>,
) -> Result<Json<StateUpdated>, ApiError> {
    let t = thread(&app, &id).await?;
    if t.status == ThreadStatus::Busy {
        return Err(ApiError::conflict(format!(
            "thread {id} has an active run: wait for it before updating its state"
        )));
    }
    let Some(graph) = graph_of(&app, &t)? else {
        return Err(ApiError::conflict(format!(
            "thread {id} has no graph yet: start a run on it first, or create it with metadata `graph_id`"
        )));
    };
    // Bound first: a crash after the write below must not leave checkpoints the
    // thread cannot name the graph of.
    if !t.metadata.contains_key("graph_id") {
        let mut m = Map::new();
        m.insert("graph_id".into(), graph.name().into());
        app.db.patch_thread(id.clone(), m).await?;
    }
    let checkpoint =
        crate::wire::checkpoint_id(req.checkpoint_id.as_ref(), req.checkpoint.as_ref());
    let values = req.values.unwrap_or_else(|| Value::Object(Map::new()));
    let saved = graph
        .update_state(&id, values, req.as_node, checkpoint)
        .await?;
    if let Some((values, interrupts)) = graph.latest(&id).await? {
        let status = if interrupts.as_array().is_some_and(|a| !a.is_empty()) {
            ThreadStatus::Interrupted
        } else {
            ThreadStatus::Idle
        };
        app.db
            .set_thread_values(id.clone(), values, interrupts, status)
            .await?;
    }
    let Json(state) = read_state(&app, &id, None, false).await?;
    let state = pick(&state, None);
    if let Err(e) = crate::lifecycle::publish_state_update(&app, &id, state).await {
        // The update is saved; only the thread streams miss it.
        tracing::warn!(error = %e.detail, thread = %id, "storing a state update event failed");
    }
    Ok(Json(saved))
}

async fn list_history(app: &App, id: &str, q: HistoryQuery) -> Result<Json<Vec<Value>>, ApiError> {
    let checkpoint = q.checkpoint.as_ref();
    let in_subgraph = checkpoint.is_some_and(|c| {
        c.checkpoint_ns.as_deref().is_some_and(|ns| !ns.is_empty())
            || c.checkpoint_map
                .as_ref()
                .and_then(Value::as_object)
                .is_some_and(|m| !m.is_empty())
    });
    if in_subgraph {
        return Err(ApiError::invalid(
            "$.checkpoint.checkpoint_ns",
            "a subgraph's history is not served: read subgraph states with get_state(subgraphs=True)",
        ));
    }
    if let Some(other) = checkpoint
        .and_then(|c| c.thread_id.as_deref())
        .filter(|t| *t != id)
    {
        return Err(ApiError::invalid(
            "$.checkpoint.thread_id",
            format!("names thread {other}, not {id}"),
        ));
    }
    let select = check_select(q.select.clone(), STATE_FIELDS, "$.select")?;
    let t = thread(app, id).await?;
    let Some(graph) = graph_of(app, &t)? else {
        return Ok(Json(Vec::new()));
    };
    if let Some(at) = checkpoint.and_then(|c| c.checkpoint_id.clone()) {
        let state = graph.state(id, Some(at), false).await?;
        return Ok(Json(
            state
                .into_iter()
                .map(|s| pick(&s, select.as_deref()))
                .collect(),
        ));
    }
    let before = match &q.before {
        Some(Value::String(s)) => Some(s.clone()),
        Some(v) => v
            .get("checkpoint_id")
            .or_else(|| v.get("configurable").and_then(|c| c.get("checkpoint_id")))
            .and_then(Value::as_str)
            .map(str::to_string),
        None => None,
    };
    let options = ListOptions {
        filter: q.metadata.unwrap_or_default(),
        before,
        limit: Some(q.limit.unwrap_or(10).min(1000)),
    };
    let states = graph.history(id, options).await?;
    Ok(Json(
        states
            .into_iter()
            .map(|state| pick(&state, select.as_deref()))
            .collect(),
    ))
}

/// The thread's checkpoints, newest first, filtered and paged.
#[utoipa::path(post, path = "/threads/{thread_id}/history", tag = "state",
    params(ThreadPath), request_body = HistoryQuery,
    responses((status = 200, description = "The states.", body = Vec<ThreadState>), Refusals))]
async fn history(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Body(q): Body<HistoryQuery>,
) -> Result<Json<Vec<Value>>, ApiError> {
    list_history(&app, &id, q).await
}

#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct HistoryParams {
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    before: Option<String>,
}

/// The thread's checkpoints, newest first.
#[utoipa::path(get, path = "/threads/{thread_id}/history", tag = "state",
    params(ThreadPath, HistoryParams),
    responses((status = 200, description = "The states.", body = Vec<ThreadState>), Refusals))]
async fn history_get(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Params(p): Params<HistoryParams>,
) -> Result<Json<Vec<Value>>, ApiError> {
    let q = HistoryQuery {
        limit: p.limit,
        before: p.before.map(Value::String),
        ..HistoryQuery::default()
    };
    list_history(&app, &id, q).await
}
