//! Making and changing assistants: create, update (a new version), delete (with
//! their threads, if asked), list versions, make a version the current one. The
//! system assistants — the served graphs — are made from code and are not changed
//! here (a 409 says so).

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde_json::{Map, Value};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{Body, Params, page};
use crate::app::{App, Found};
use crate::db::{AssistantChange, AssistantRow, ThreadQuery, ThreadStatus, contains};
use crate::error::{ApiError, Refusals};
use crate::served::{RunRequest, Served};
use crate::wire::{
    Assistant, AssistantCreate, AssistantLatest, AssistantPatch, AssistantVersions, IfExists,
    RunConfigRequest, RunKwargs,
};

pub(super) fn routes() -> OpenApiRouter<Arc<App>> {
    OpenApiRouter::new()
        .routes(routes!(create))
        .routes(routes!(update, delete))
        .routes(routes!(versions))
        .routes(routes!(set_latest))
}

/// An assistant named in the path.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
#[allow(dead_code)]
struct AssistantPath {
    /// The assistant's id.
    assistant_id: String,
}

/// Checks an assistant's configuration and context against its graph, as a run of
/// it would be checked: a field `config` does not take, or a context the graph's
/// context type does not decode, is a 422 naming it.
fn check_against(
    graph: &dyn Served,
    config: Option<&Map<String, Value>>,
    context: Option<&Map<String, Value>>,
) -> Result<(), ApiError> {
    let config = match config {
        None => None,
        Some(c) => Some(crate::error::decode_at::<RunConfigRequest>(
            Value::Object(c.clone()),
            "$.config",
        )?),
    };
    let kwargs = RunKwargs {
        config,
        context: context.map(|c| Value::Object(c.clone())),
        ..RunKwargs::default()
    };
    let request = RunRequest::of("", "", kwargs, Map::new())?;
    graph.check(&request)
}

/// The assistant named, unless it is a system one (a 409: it is the served graph).
async fn stored(app: &App, id: &str) -> Result<Found, ApiError> {
    let found = app.find_assistant(id).await?;
    if found.system {
        return Err(ApiError::conflict(format!(
            "assistant {id} is the served graph `{}`, made from code: create an assistant \
             of the graph (POST /assistants) to configure it",
            found.graph.name()
        )));
    }
    Ok(found)
}

/// Creates an assistant of a served graph.
#[utoipa::path(post, path = "/assistants", tag = "assistants", request_body = AssistantCreate,
    responses((status = 200, description = "The assistant.", body = Assistant), Refusals))]
async fn create(
    State(app): State<Arc<App>>,
    Body(req): Body<AssistantCreate>,
) -> Result<Json<Assistant>, ApiError> {
    if req.graph_id.is_empty() {
        return Err(ApiError::invalid(
            "$.graph_id",
            "required: the served graph the assistant runs",
        ));
    }
    let graph = app.graph_named(&req.graph_id)?;
    check_against(graph.as_ref(), req.config.as_ref(), req.context.as_ref())?;
    let id = req
        .assistant_id
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    if let Ok(system) = app.assistant(&id) {
        return Err(ApiError::conflict(format!(
            "assistant {id} is the served graph `{}`: use another id",
            system.graph.name()
        )));
    }
    let row = AssistantRow {
        assistant_id: id,
        graph_id: graph.name().to_string(),
        name: req.name.unwrap_or_else(|| graph.name().to_string()),
        description: req.description,
        config: req.config.unwrap_or_default(),
        context: req.context.unwrap_or_default(),
        metadata: req.metadata.unwrap_or_default(),
        version: 1,
        created_at: 0,
        updated_at: 0,
    };
    let do_nothing = req.if_exists == Some(IfExists::DoNothing);
    let row = app.db.insert_assistant(row, do_nothing).await?;
    Ok(Json(Assistant::from(&row)))
}

/// Changes an assistant: the change is its new version, made the current one.
#[utoipa::path(patch, path = "/assistants/{assistant_id}", tag = "assistants",
    params(AssistantPath), request_body = AssistantPatch,
    responses((status = 200, description = "The assistant, at its new version.", body = Assistant), Refusals))]
async fn update(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Body(req): Body<AssistantPatch>,
) -> Result<Json<Assistant>, ApiError> {
    let current = stored(&app, &id).await?;
    let graph = match &req.graph_id {
        Some(g) => app.graph_named(g)?,
        None => current.graph.clone(),
    };
    let config = req.config.as_ref().or(Some(&current.config));
    let context = req.context.as_ref().or(Some(&current.context));
    check_against(graph.as_ref(), config, context)?;
    let change = AssistantChange {
        graph_id: req.graph_id.map(|_| graph.name().to_string()),
        name: req.name,
        description: req.description,
        config: req.config,
        context: req.context,
        metadata: req.metadata,
    };
    let row = app
        .db
        .update_assistant(id.clone(), change)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("assistant {id}")))?;
    Ok(Json(Assistant::from(&row)))
}

#[derive(Debug, Default, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct DeleteParams {
    /// Delete the threads that ran it too (none may have an active run).
    #[serde(default, deserialize_with = "super::flag")]
    delete_threads: Option<bool>,
}

/// Deletes an assistant and its versions; with `delete_threads`, the threads that
/// ran it, with their runs and checkpoints.
#[utoipa::path(delete, path = "/assistants/{assistant_id}", tag = "assistants",
    params(AssistantPath, DeleteParams),
    responses((status = 204, description = "Deleted."), Refusals))]
async fn delete(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Params(p): Params<DeleteParams>,
) -> Result<StatusCode, ApiError> {
    stored(&app, &id).await?;
    if p.delete_threads == Some(true) {
        let query = ThreadQuery {
            metadata: Map::from_iter([("assistant_id".to_string(), Value::from(id.clone()))]),
            limit: usize::MAX,
            ..ThreadQuery::default()
        };
        let threads = app.db.search_threads(query).await?;
        if let Some(busy) = threads.iter().find(|t| t.status == ThreadStatus::Busy) {
            return Err(ApiError::conflict(format!(
                "thread {} of assistant {id} has an active run: cancel it first",
                busy.thread_id
            )));
        }
        for t in threads {
            app.saver
                .delete_thread(&t.thread_id)
                .await
                .map_err(ApiError::internal)?;
            app.db.delete_thread(t.thread_id).await?;
        }
    }
    if app.db.delete_assistant(id.clone()).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found(format!("assistant {id}")))
    }
}

/// An assistant's versions, newest first (a system assistant has one).
#[utoipa::path(post, path = "/assistants/{assistant_id}/versions", tag = "assistants",
    params(AssistantPath), request_body = AssistantVersions,
    responses((status = 200, description = "Its versions.", body = Vec<Assistant>), Refusals))]
async fn versions(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Body(req): Body<AssistantVersions>,
) -> Result<Json<Vec<Assistant>>, ApiError> {
    let found = app.find_assistant(&id).await?;
    let all: Vec<Assistant> = if found.system {
        vec![found.wire]
    } else {
        app.db
            .assistant_versions(found.id.clone())
            .await?
            .ok_or_else(|| ApiError::not_found(format!("assistant {id}")))?
            .iter()
            .map(Assistant::from)
            .collect()
    };
    let wanted = req.metadata.unwrap_or_default();
    let (limit, offset) = page(req.limit, req.offset, 10);
    Ok(Json(
        all.into_iter()
            .filter(|a| contains(&Value::Object(a.metadata.clone()), &wanted))
            .skip(offset)
            .take(limit)
            .collect(),
    ))
}

/// Makes one of an assistant's versions its current one.
#[utoipa::path(post, path = "/assistants/{assistant_id}/latest", tag = "assistants",
    params(AssistantPath), request_body = AssistantLatest,
    responses((status = 200, description = "The assistant, at that version.", body = Assistant), Refusals))]
async fn set_latest(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Body(req): Body<AssistantLatest>,
) -> Result<Json<Assistant>, ApiError> {
    let Some(version) = req.version else {
        return Err(ApiError::invalid(
            "$.version",
            "required: the version to make current",
        ));
    };
    let found = app.find_assistant(&id).await?;
    if found.system {
        return if version == 1 {
            Ok(Json(found.wire))
        } else {
            Err(ApiError::not_found(format!(
                "version {version} of assistant {id}"
            )))
        };
    }
    let row = app
        .db
        .set_latest_version(found.id, version)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("version {version} of assistant {id}")))?;
    Ok(Json(Assistant::from(&row)))
}
