//! `/threads`: create, read, search, count, patch, copy and delete threads.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{Body, Params, page};
use crate::app::App;
use crate::db::{ThreadOrder, ThreadQuery, ThreadRow, ThreadStatus};
use crate::error::{ApiError, Refusals};
use crate::served::Served;
use crate::wire::{
    IfExists, PruneStrategy, Pruned, SortOrder, THREAD_FIELDS, Thread, ThreadCreate, ThreadPatch,
    ThreadPrune, ThreadSearch, ThreadSortBy, ThreadTtlInfo, TtlRequest, check_select, pick,
};

pub(super) fn routes() -> OpenApiRouter<Arc<App>> {
    OpenApiRouter::new()
        .routes(routes!(create))
        .routes(routes!(search))
        .routes(routes!(count))
        .routes(routes!(one, patch, delete))
        .routes(routes!(copy))
        .routes(routes!(prune))
}

/// The thread, or a 404.
pub(crate) async fn thread(app: &App, id: &str) -> Result<ThreadRow, ApiError> {
    app.db
        .get_thread(id.to_string())
        .await?
        .ok_or_else(|| ApiError::not_found(format!("thread {id}")))
}

/// The graph a thread runs: the one its metadata names, else the only one served.
pub(crate) fn graph_of(app: &App, t: &ThreadRow) -> Result<Option<Arc<dyn Served>>, ApiError> {
    if let Some(id) = t.metadata.get("graph_id").and_then(Value::as_str) {
        return Ok(Some(app.assistant(id)?.graph.clone()));
    }
    if app.assistants.len() == 1 {
        return Ok(app.assistants.values().next().map(|a| a.graph.clone()));
    }
    Ok(None)
}

/// Creates a thread (`if_exists: "do_nothing"` returns an existing one).
#[utoipa::path(post, path = "/threads", tag = "threads", request_body = ThreadCreate,
    responses((status = 200, description = "The thread.", body = Thread), Refusals))]
async fn create(
    State(app): State<Arc<App>>,
    Body(req): Body<ThreadCreate>,
) -> Result<Json<Thread>, ApiError> {
    let id = req
        .thread_id
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let do_nothing = req.if_exists == Some(IfExists::DoNothing);
    if req.supersteps.as_ref().is_some_and(|v| !v.is_null()) {
        return Err(ApiError::invalid(
            "$.supersteps",
            "not supported by this server: leave it out",
        ));
    }
    let ttl = req.ttl.map(TtlRequest::stored).transpose()?;
    let mut metadata = req.metadata.unwrap_or_default();
    if let Some(graph) = &req.graph_id {
        let assistant = app.assistant(graph)?;
        metadata.insert("graph_id".into(), assistant.graph.name().into());
        metadata.insert("assistant_id".into(), assistant.id.clone().into());
    }
    let row = app.db.create_thread(id, metadata, do_nothing).await?;
    if ttl.is_some() {
        app.db.set_thread_ttl(row.thread_id.clone(), ttl).await?;
    }
    Ok(Json(Thread::from(&row)))
}

fn query_of(req: ThreadSearch) -> Result<ThreadQuery, ApiError> {
    let status = match req.status.as_deref() {
        None => None,
        Some(s) => Some(ThreadStatus::parse(s).ok_or_else(|| {
            ApiError::invalid(
                "$.status",
                format!("unknown thread status `{s}`; known: idle, busy, interrupted, error"),
            )
        })?),
    };
    let (limit, offset) = page(req.limit, req.offset, 10);
    Ok(ThreadQuery {
        metadata: req.metadata.unwrap_or_default(),
        values: req.values.unwrap_or_default(),
        status,
        ids: req.ids,
        order: match req.sort_by {
            Some(ThreadSortBy::ThreadId) => ThreadOrder::ThreadId,
            Some(ThreadSortBy::Status) => ThreadOrder::Status,
            Some(ThreadSortBy::CreatedAt) => ThreadOrder::CreatedAt,
            None | Some(ThreadSortBy::UpdatedAt | ThreadSortBy::StateUpdatedAt) => {
                ThreadOrder::UpdatedAt
            }
        },
        ascending: req.sort_order == Some(SortOrder::Asc),
        limit,
        offset,
    })
}

/// At most this many `extract` paths per search, as LangGraph Platform allows.
const MAX_EXTRACT: usize = 10;

/// Threads matching a filter, sorted and paged.
///
/// `select` picks fields; `extract` adds values found at paths.
#[utoipa::path(post, path = "/threads/search", tag = "threads", request_body = ThreadSearch,
    responses((status = 200, description = "The threads.", body = Vec<Thread>), Refusals))]
async fn search(
    State(app): State<Arc<App>>,
    Body(mut req): Body<ThreadSearch>,
) -> Result<Json<Vec<Value>>, ApiError> {
    let select = check_select(req.select.take(), THREAD_FIELDS, "$.select")?;
    let extract = extract_paths(req.extract.take())?;
    let rows = app.db.search_threads(query_of(req)?).await?;
    let shown = rows.iter().map(|t| {
        let full = Thread::from(t);
        let whole = pick(&full, None);
        let extracted: Map<String, Value> = extract
            .iter()
            .map(|(alias, path)| {
                let v = crate::wire::extract(&whole, path).unwrap_or(Value::Null);
                (alias.clone(), v)
            })
            .collect();
        let mut shown = pick(&full, select.as_deref());
        if !extract.is_empty() {
            shown["extracted"] = Value::Object(extracted);
        }
        shown
    });
    Ok(Json(shown.collect()))
}

/// A search's `extract`: aliases of paths (strings), at most [`MAX_EXTRACT`].
fn extract_paths(extract: Option<Map<String, Value>>) -> Result<Vec<(String, String)>, ApiError> {
    let extract = extract.unwrap_or_default();
    if extract.len() > MAX_EXTRACT {
        return Err(ApiError::invalid(
            "$.extract",
            format!("at most {MAX_EXTRACT} paths, not {}", extract.len()),
        ));
    }
    extract
        .into_iter()
        .map(|(alias, path)| match path {
            Value::String(p) if !p.is_empty() => Ok((alias, p)),
            _ => Err(ApiError::invalid(
                format!("$.extract.{alias}"),
                "expected a path such as `values.messages[-1]`",
            )),
        })
        .collect()
}

/// How many threads match a filter.
#[utoipa::path(post, path = "/threads/count", tag = "threads", request_body = ThreadSearch,
    responses((status = 200, description = "How many.", content_type = "application/json", body = u64), Refusals))]
async fn count(
    State(app): State<Arc<App>>,
    Body(req): Body<ThreadSearch>,
) -> Result<Json<u64>, ApiError> {
    Ok(Json(app.db.count_threads(query_of(req)?).await?))
}

/// A thread.
#[utoipa::path(get, path = "/threads/{thread_id}", tag = "threads", params(ThreadPath, GetParams),
    responses((status = 200, description = "The thread.", body = Thread), Refusals))]
async fn one(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Params(p): Params<GetParams>,
) -> Result<Json<Thread>, ApiError> {
    let mut with_ttl = false;
    for field in p.include.iter().flat_map(|i| i.split(',')).map(str::trim) {
        match field {
            "" => {}
            "ttl" => with_ttl = true,
            other => {
                return Err(ApiError::invalid(
                    "query.include",
                    format!("`{other}` is not a field to include: the one served is `ttl`"),
                ));
            }
        }
    }
    let row = thread(&app, &id).await?;
    let mut out = Thread::from(&row);
    if with_ttl {
        let ttl = app.db.thread_ttl(id).await?.or(app.limits.thread_ttl);
        out.ttl = Some(ttl.map(|t| ThreadTtlInfo::of(t, row.updated_at)));
    }
    Ok(Json(out))
}

/// Merges metadata into a thread's.
#[utoipa::path(patch, path = "/threads/{thread_id}", tag = "threads",
    params(ThreadPath, ("Prefer" = Option<String>, Header, description = "`return=minimal`: answer 204 without the thread.")),
    request_body = ThreadPatch,
    responses((status = 200, description = "The thread.", body = Thread), (status = 204, description = "Patched (`Prefer: return=minimal`)."), Refusals))]
async fn patch(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Body(req): Body<ThreadPatch>,
) -> Result<Response, ApiError> {
    let ttl = req.ttl.map(TtlRequest::stored).transpose()?;
    if ttl.is_some() && !app.db.set_thread_ttl(id.clone(), ttl).await? {
        return Err(ApiError::not_found(format!("thread {id}")));
    }
    let row = app
        .db
        .patch_thread(id.clone(), req.metadata.unwrap_or_default())
        .await?
        .ok_or_else(|| ApiError::not_found(format!("thread {id}")))?;
    // `Prefer: return=minimal` (the SDKs' `return_minimal`): no body.
    let minimal = headers
        .get_all("prefer")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|p| p.trim().eq_ignore_ascii_case("return=minimal"));
    if minimal {
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    Ok(Json(Thread::from(&row)).into_response())
}

/// Deletes a thread with its runs and checkpoints (a 409 while a run is active).
#[utoipa::path(delete, path = "/threads/{thread_id}", tag = "threads", params(ThreadPath),
    responses((status = 204, description = "Deleted."), Refusals))]
async fn delete(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let t = thread(&app, &id).await?;
    if t.status == ThreadStatus::Busy {
        return Err(ApiError::conflict(format!(
            "thread {id} has an active run: cancel it before deleting the thread"
        )));
    }
    app.saver
        .delete_thread(&id)
        .await
        .map_err(ApiError::internal)?;
    app.db.delete_thread(id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Copies a thread with its checkpoints under a new id.
#[utoipa::path(post, path = "/threads/{thread_id}/copy", tag = "threads", params(ThreadPath),
    responses((status = 200, description = "The copy.", body = Thread), Refusals))]
async fn copy(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
) -> Result<Json<Thread>, ApiError> {
    let t = thread(&app, &id).await?;
    let new_id = uuid::Uuid::new_v4().to_string();
    app.saver
        .copy_thread(&id, &new_id)
        .await
        .map_err(ApiError::internal)?;
    app.db
        .create_thread(new_id.clone(), t.metadata.clone(), false)
        .await?;
    let status = if t.status == ThreadStatus::Busy {
        ThreadStatus::Idle
    } else {
        t.status
    };
    app.db
        .set_thread_values(
            new_id.clone(),
            t.values.clone(),
            t.interrupts.clone(),
            status,
        )
        .await?;
    Ok(Json(Thread::from(&thread(&app, &new_id).await?)))
}

/// `GET /threads/{id}` options.
#[derive(Debug, Default, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct GetParams {
    /// Extra fields (`ttl`): none are served, so any is a 422.
    #[serde(default)]
    include: Option<String>,
}

/// A thread named in the path.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct ThreadPath {
    /// The thread's id.
    #[allow(dead_code)]
    thread_id: String,
}

/// Prunes threads: deletes them (`delete`, the default) or keeps each one's latest
/// checkpoint (`keep_latest`). Unknown threads, and threads with an active run, are
/// left as they are.
#[utoipa::path(post, path = "/threads/prune", tag = "threads", request_body = ThreadPrune,
    responses((status = 200, description = "How many were pruned.", body = Pruned), Refusals))]
async fn prune(
    State(app): State<Arc<App>>,
    Body(req): Body<ThreadPrune>,
) -> Result<Json<Pruned>, ApiError> {
    const MOST: usize = 1000;
    if req.thread_ids.len() > MOST {
        return Err(ApiError::invalid(
            "$.thread_ids",
            format!(
                "at most {MOST} threads at once, not {}",
                req.thread_ids.len()
            ),
        ));
    }
    let keep_latest = req.strategy == PruneStrategy::KeepLatest;
    let mut pruned_count = 0;
    for id in &req.thread_ids {
        if crate::retention::prune_thread(&app, id, keep_latest).await? {
            pruned_count += 1;
        }
    }
    Ok(Json(Pruned { pruned_count }))
}
