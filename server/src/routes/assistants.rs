//! `/assistants`: the served graphs, their drawable shape and their JSON Schemas.

use std::sync::Arc;

use axum::Json;
use axum::Router;
use axum::extract::{Path, State};
use axum::routing::{get, post};
use serde_json::{Value, json};
use stategraph::{GraphShape, ShapeNodeKind};

use super::{Body, page};
use crate::app::App;
use crate::error::ApiError;
use crate::wire::{
    ASSISTANT_FIELDS, AssistantSearch, AssistantSortBy, SortOrder, check_select, pick,
};

pub(super) fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/assistants/search", post(search))
        .route("/assistants/count", post(count))
        .route("/assistants/{id}", get(one))
        .route("/assistants/{id}/graph", get(graph))
        .route("/assistants/{id}/schemas", get(schemas))
}

fn matching<'a>(app: &'a App, q: &AssistantSearch) -> Vec<&'a crate::app::Assistant> {
    let wanted = q.metadata.clone().unwrap_or_default();
    let mut found: Vec<_> = app
        .assistants
        .values()
        .filter(|a| q.graph_id.as_ref().is_none_or(|g| g == a.graph.name()))
        .filter(|a| {
            q.name
                .as_ref()
                .is_none_or(|n| a.graph.name().contains(n.as_str()))
        })
        .filter(|a| crate::db::contains(&a.json()["metadata"], &wanted))
        .collect();
    // By name unless asked otherwise; every assistant is made at start-up, so by
    // time they tie and the name decides.
    found.sort_by(|a, b| {
        let by = match q.sort_by {
            Some(AssistantSortBy::AssistantId) => a.id.cmp(&b.id),
            _ => a.graph.name().cmp(b.graph.name()),
        };
        if q.sort_order == Some(SortOrder::Desc) {
            by.reverse()
        } else {
            by
        }
    });
    found
}

async fn search(
    State(app): State<Arc<App>>,
    Body(mut q): Body<AssistantSearch>,
) -> Result<Json<Value>, ApiError> {
    let select = check_select(q.select.take(), ASSISTANT_FIELDS, "$.select")?;
    let (limit, offset) = page(q.limit, q.offset, 10);
    let list: Vec<Value> = matching(&app, &q)
        .into_iter()
        .skip(offset)
        .take(limit)
        .map(|a| pick(a.json(), select.as_deref()))
        .collect();
    Ok(Json(Value::Array(list)))
}

async fn count(State(app): State<Arc<App>>, Body(q): Body<AssistantSearch>) -> Json<Value> {
    Json(json!(matching(&app, &q).len()))
}

async fn one(State(app): State<Arc<App>>, Path(id): Path<String>) -> Result<Json<Value>, ApiError> {
    Ok(Json(app.assistant(&id)?.json()))
}

/// The shape in LangGraph's drawable form: `{nodes: [{id, type, data}], edges:
/// [{source, target, conditional}]}`; a subgraph node carries its child's shape.
fn drawable(shape: &GraphShape) -> Value {
    let nodes: Vec<Value> = shape
        .nodes
        .iter()
        .map(|n| {
            let kind = match n.kind {
                ShapeNodeKind::Start | ShapeNodeKind::End => "schema",
                ShapeNodeKind::Node | ShapeNodeKind::Subgraph => "runnable",
            };
            let mut node = json!({ "id": n.id, "type": kind, "data": n.id });
            if n.deferred {
                node["metadata"] = json!({ "defer": true });
            }
            if let Some(child) = &n.subgraph {
                node["subgraph"] = drawable(child);
            }
            node
        })
        .collect();
    let edges: Vec<Value> = shape
        .edges
        .iter()
        .map(|e| {
            let mut edge =
                json!({ "source": e.source, "target": e.target, "conditional": e.conditional });
            if !e.join.is_empty() {
                edge["join"] = json!(e.join);
            }
            edge
        })
        .collect();
    json!({ "nodes": nodes, "edges": edges, "version": shape.version })
}

async fn graph(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(drawable(&app.assistant(&id)?.graph.shape())))
}

async fn schemas(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let a = app.assistant(&id)?;
    let mut s = a.graph.schemas();
    s["graph_id"] = json!(a.graph.name());
    Ok(Json(s))
}
