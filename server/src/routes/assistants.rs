//! `/assistants`: the served graphs, their drawable shape and their JSON Schemas.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};
use stategraph::{GraphShape, ShapeNodeKind};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{Body, Params, page};
use crate::app::App;
use crate::error::{ApiError, Refusals};
use crate::wire::{
    ASSISTANT_FIELDS, Assistant, AssistantSearch, AssistantSortBy, DrawnEdge, DrawnNode,
    GraphDrawing, GraphSchemas, SortOrder, SubgraphSchemas, check_select, pick,
};

pub(super) fn routes() -> OpenApiRouter<Arc<App>> {
    OpenApiRouter::new()
        .routes(routes!(search))
        .routes(routes!(count))
        .routes(routes!(one))
        .routes(routes!(graph))
        .routes(routes!(schemas))
        .routes(routes!(subgraphs))
        .routes(routes!(subgraphs_in))
}

/// An assistant named in the path.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
#[allow(dead_code)]
struct AssistantPath {
    /// The assistant's id, or its graph's name.
    assistant_id: String,
}

/// The assistants — the served graphs and those made through the API — matching a
/// search, in its order.
async fn matching(app: &App, q: &AssistantSearch) -> Result<Vec<Assistant>, ApiError> {
    let wanted = q.metadata.clone().unwrap_or_default();
    let stored = app.db.list_assistants().await?;
    let mut found: Vec<Assistant> = app
        .assistants
        .values()
        .map(crate::app::Assistant::wire)
        .chain(stored.iter().map(Assistant::from))
        .filter(|a| q.graph_id.as_ref().is_none_or(|g| *g == a.graph_id))
        .filter(|a| q.name.as_ref().is_none_or(|n| a.name.contains(n.as_str())))
        .filter(|a| crate::db::contains(&Value::Object(a.metadata.clone()), &wanted))
        .collect();
    // By name unless asked otherwise; ties by id.
    found.sort_by(|a, b| {
        let by = match q.sort_by {
            Some(AssistantSortBy::AssistantId) => a.assistant_id.cmp(&b.assistant_id),
            Some(AssistantSortBy::GraphId) => a.graph_id.cmp(&b.graph_id),
            Some(AssistantSortBy::CreatedAt) => a.created_at.cmp(&b.created_at),
            Some(AssistantSortBy::UpdatedAt) => a.updated_at.cmp(&b.updated_at),
            Some(AssistantSortBy::Name) | None => a.name.cmp(&b.name),
        }
        .then_with(|| a.assistant_id.cmp(&b.assistant_id));
        if q.sort_order == Some(SortOrder::Desc) {
            by.reverse()
        } else {
            by
        }
    });
    Ok(found)
}

/// The assistants matching a filter.
#[utoipa::path(post, path = "/assistants/search", tag = "assistants", request_body = AssistantSearch,
    responses((status = 200, description = "The assistants.", body = Vec<Assistant>), Refusals))]
async fn search(
    State(app): State<Arc<App>>,
    Body(mut q): Body<AssistantSearch>,
) -> Result<Response, ApiError> {
    let select = check_select(q.select.take(), ASSISTANT_FIELDS, "$.select")?;
    let (limit, offset) = page(q.limit, q.offset, 10);
    let found = matching(&app, &q).await?;
    let list: Vec<Value> = found
        .iter()
        .skip(offset)
        .take(limit)
        .map(|a| pick(a, select.as_deref()))
        .collect();
    let mut response = Json(list).into_response();
    // The next page's offset, which the SDKs read for `response_format="object"`.
    let next = offset.saturating_add(limit);
    if next < found.len() {
        response
            .headers_mut()
            .insert("x-pagination-next", axum::http::HeaderValue::from(next));
    }
    Ok(response)
}

/// How many assistants match a filter.
#[utoipa::path(post, path = "/assistants/count", tag = "assistants", request_body = AssistantSearch,
    responses((status = 200, description = "How many.", content_type = "application/json", body = usize), Refusals))]
async fn count(
    State(app): State<Arc<App>>,
    Body(q): Body<AssistantSearch>,
) -> Result<Json<usize>, ApiError> {
    Ok(Json(matching(&app, &q).await?.len()))
}

/// An assistant.
#[utoipa::path(get, path = "/assistants/{assistant_id}", tag = "assistants", params(AssistantPath),
    responses((status = 200, description = "The assistant.", body = Assistant), Refusals))]
async fn one(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
) -> Result<Json<Assistant>, ApiError> {
    Ok(Json(app.find_assistant(&id).await?.wire))
}

/// The shape in LangGraph's drawable form; with `depth` left, a subgraph node
/// carries its child's (`None`: every level).
fn drawable(shape: &GraphShape, depth: Option<usize>) -> GraphDrawing {
    let deeper = depth.map(|d| d.saturating_sub(1));
    let nodes = shape
        .nodes
        .iter()
        .map(|n| DrawnNode {
            id: n.id.clone(),
            kind: match n.kind {
                ShapeNodeKind::Start | ShapeNodeKind::End => "schema",
                ShapeNodeKind::Node | ShapeNodeKind::Subgraph => "runnable",
            }
            .to_string(),
            data: n.id.clone(),
            metadata: n
                .deferred
                .then(|| Value::Object(Map::from_iter([("defer".into(), Value::Bool(true))]))),
            subgraph: n
                .subgraph
                .as_ref()
                .filter(|_| depth != Some(0))
                .map(|child| Box::new(drawable(child, deeper))),
        })
        .collect();
    let edges = shape
        .edges
        .iter()
        .map(|e| DrawnEdge {
            source: e.source.clone(),
            target: e.target.clone(),
            conditional: e.conditional,
            join: e.join.clone(),
        })
        .collect();
    GraphDrawing {
        nodes,
        edges,
        version: shape.version.clone(),
    }
}

#[derive(Debug, Default, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct GraphParams {
    /// Draw subgraphs inside their nodes: `true` every level, a number that many
    /// levels, `false` (the default) none.
    #[param(value_type = Option<String>)]
    #[serde(default)]
    xray: Option<String>,
}

/// How many levels of subgraphs `xray` asks for (`None`: all).
fn xray_depth(xray: Option<&str>) -> Result<Option<usize>, ApiError> {
    match xray {
        None | Some("false" | "False") => Ok(Some(0)),
        Some("true" | "True") => Ok(None),
        Some(n) => n.parse().map(Some).map_err(|_| {
            ApiError::invalid(
                "query.xray",
                format!("expected true, false or a number of levels, not `{n}`"),
            )
        }),
    }
}

/// The assistant's graph, drawable.
#[utoipa::path(get, path = "/assistants/{assistant_id}/graph", tag = "assistants",
    params(AssistantPath, GraphParams),
    responses((status = 200, description = "Its nodes and edges.", body = GraphDrawing), Refusals))]
async fn graph(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Params(p): Params<GraphParams>,
) -> Result<Json<GraphDrawing>, ApiError> {
    let depth = xray_depth(p.xray.as_deref())?;
    let graph = app.find_assistant(&id).await?.graph;
    Ok(Json(drawable(&graph.shape(), depth)))
}

/// The JSON Schemas of the assistant's input, output, state and context.
#[utoipa::path(get, path = "/assistants/{assistant_id}/schemas", tag = "assistants",
    params(AssistantPath),
    responses((status = 200, description = "The schemas.", body = GraphSchemas), Refusals))]
async fn schemas(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
) -> Result<Json<GraphSchemas>, ApiError> {
    Ok(Json(app.find_assistant(&id).await?.graph.schemas()))
}

/// The subgraph namespaces of `shape` under `prefix`: each subgraph node's name, and
/// with `recurse` the nested ones as `parent|child`.
fn namespaces(shape: &GraphShape, prefix: &str, recurse: bool, out: &mut Vec<String>) {
    for node in &shape.nodes {
        let Some(child) = &node.subgraph else {
            continue;
        };
        let ns = if prefix.is_empty() {
            node.id.clone()
        } else {
            format!("{prefix}|{}", node.id)
        };
        if recurse {
            namespaces(child, &ns, true, out);
        }
        out.push(ns);
    }
}

#[derive(Debug, Default, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct SubgraphParams {
    /// Nested subgraphs too (`true`/`false`).
    #[serde(default, deserialize_with = "super::flag")]
    recurse: Option<bool>,
}

/// The subgraphs of an assistant's graph, by namespace, that match `only` (a
/// namespace and, with `recurse`, what is nested in it).
async fn subgraphs_of(
    app: &App,
    id: &str,
    only: Option<&str>,
    recurse: bool,
) -> Result<BTreeMap<String, SubgraphSchemas>, ApiError> {
    let found = app.find_assistant(id).await?;
    let mut all = Vec::new();
    namespaces(
        &found.graph.shape(),
        "",
        recurse || only.is_some(),
        &mut all,
    );
    Ok(all
        .into_iter()
        .filter(|ns| {
            only.is_none_or(|o| {
                ns == o || (recurse && ns.starts_with(o) && ns[o.len()..].starts_with('|'))
            })
        })
        .filter(|ns| only.is_some() || recurse || !ns.contains('|'))
        .map(|ns| {
            let schemas = SubgraphSchemas {
                graph_id: found.graph.name().to_string(),
                input_schema: None,
                output_schema: None,
                state_schema: None,
                config_schema: None,
                context_schema: None,
            };
            (ns, schemas)
        })
        .collect())
}

/// The subgraphs of the assistant's graph, by namespace (`recurse`: nested ones as
/// `parent|child` too).
#[utoipa::path(get, path = "/assistants/{assistant_id}/subgraphs", tag = "assistants",
    params(AssistantPath, SubgraphParams),
    responses((status = 200, description = "Its subgraphs by namespace.", body = BTreeMap<String, SubgraphSchemas>), Refusals))]
async fn subgraphs(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Params(p): Params<SubgraphParams>,
) -> Result<Json<BTreeMap<String, SubgraphSchemas>>, ApiError> {
    Ok(Json(
        subgraphs_of(&app, &id, None, p.recurse == Some(true)).await?,
    ))
}

/// A subgraph of the assistant's graph by namespace (`recurse`: with what is
/// nested in it).
#[utoipa::path(get, path = "/assistants/{assistant_id}/subgraphs/{namespace}", tag = "assistants",
    params(AssistantPath, ("namespace" = String, Path, description = "A subgraph's namespace."), SubgraphParams),
    responses((status = 200, description = "That subgraph (none when no subgraph has that namespace).", body = BTreeMap<String, SubgraphSchemas>), Refusals))]
async fn subgraphs_in(
    State(app): State<Arc<App>>,
    Path((id, ns)): Path<(String, String)>,
    Params(p): Params<SubgraphParams>,
) -> Result<Json<BTreeMap<String, SubgraphSchemas>>, ApiError> {
    let recurse = p.recurse == Some(true);
    Ok(Json(subgraphs_of(&app, &id, Some(&ns), recurse).await?))
}
