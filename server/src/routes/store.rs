//! `/store`: the long-term memory store the graphs' nodes use
//! (`NodeContext::store`), for clients: put, get, delete and search items, list
//! namespaces.

use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::Value;
use stategraph::store::{
    Filter, IndexFields, NamespaceQuery, PutOptions, SearchQuery, StoreError, StoreOp, StoreOutput,
};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{Body, Params};
use crate::app::App;
use crate::error::{ApiError, Refusals};
use crate::wire::{Item, Namespaces, SearchItems};

pub(super) fn routes() -> OpenApiRouter<Arc<App>> {
    OpenApiRouter::new()
        .routes(routes!(put_item, get_item, delete_item))
        .routes(routes!(search))
        .routes(routes!(namespaces))
}

fn store_error(e: StoreError) -> ApiError {
    match e {
        StoreError::InvalidNamespace { .. }
        | StoreError::InvalidKey { .. }
        | StoreError::NotAnObject { .. } => ApiError::invalid("$", e.to_string()),
        other => match other {
            StoreError::BadFilter { .. } => ApiError::invalid("$.filter", other.to_string()),
            StoreError::NoIndex => ApiError::invalid("$.query", other.to_string()),
            StoreError::TooLarge { .. } => ApiError::invalid("$.value", other.to_string()),
            other => ApiError::internal(other),
        },
    }
}

fn labels(ns: &[String]) -> Vec<&str> {
    ns.iter().map(String::as_str).collect()
}

/// `PUT /store/items`.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct PutItem {
    #[serde(default)]
    namespace: Vec<String>,
    #[serde(default)]
    key: String,
    #[serde(default)]
    #[schema(value_type = Object)]
    value: Value,
    /// `false` (not indexed) or the field paths to index.
    #[serde(default)]
    index: Option<Value>,
    /// Minutes, as LangGraph Platform takes it.
    #[serde(default)]
    ttl: Option<f64>,
}

/// Stores an item (replacing one under the same key).
#[utoipa::path(put, path = "/store/items", tag = "store", request_body = PutItem,
    responses((status = 204, description = "Stored."), Refusals))]
async fn put_item(
    State(app): State<Arc<App>>,
    Body(req): Body<PutItem>,
) -> Result<StatusCode, ApiError> {
    let index = match &req.index {
        None | Some(Value::Null) | Some(Value::Bool(true)) => IndexFields::Configured,
        Some(Value::Bool(false)) => IndexFields::Skip,
        Some(Value::Array(fields)) => IndexFields::Paths(
            fields
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
        ),
        Some(_) => {
            return Err(ApiError::invalid(
                "$.index",
                "expected false or a list of field paths",
            ));
        }
    };
    let ttl = match req.ttl {
        None => None,
        // `try_`: a finite but huge number of minutes is no `Duration` either.
        Some(m) if m > 0.0 => Some(Duration::try_from_secs_f64(m * 60.0).map_err(|_| {
            ApiError::invalid("$.ttl", format!("{m} minutes is more than a TTL can be"))
        })?),
        Some(_) => {
            return Err(ApiError::invalid(
                "$.ttl",
                "expected a positive number of minutes",
            ));
        }
    };
    let options = PutOptions { ttl, index };
    app.store
        .put_with(&labels(&req.namespace), &req.key, req.value, options)
        .await
        .map_err(store_error)?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct ItemRef {
    /// The namespace's labels joined by dots.
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    key: String,
    /// Whether reading the item restarts its time-to-live (the store's own setting
    /// when absent).
    #[serde(default, deserialize_with = "super::flag")]
    refresh_ttl: Option<bool>,
}

/// An item, or `null` when there is none.
///
/// As LangGraph Platform answers: its clients test for `None`.
#[utoipa::path(get, path = "/store/items", tag = "store", params(ItemRef),
    responses((status = 200, description = "The item, or `null`.", body = Option<Item>), Refusals))]
async fn get_item(
    State(app): State<Arc<App>>,
    Params(q): Params<ItemRef>,
) -> Result<Json<Option<Item>>, ApiError> {
    let ns: Vec<String> = q
        .namespace
        .as_deref()
        .unwrap_or("")
        .split('.')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    let get = StoreOp::Get {
        namespace: ns,
        key: q.key,
        refresh_ttl: q.refresh_ttl,
    };
    let item = match app.store.batch(vec![get]).await.map_err(store_error)?.pop() {
        Some(StoreOutput::Item(item)) => item,
        _ => None,
    };
    Ok(Json(item.map(|i| Item::of(&i, None))))
}

/// `DELETE /store/items`.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct DeleteItem {
    #[serde(default)]
    namespace: Vec<String>,
    #[serde(default)]
    key: String,
}

/// Deletes an item.
#[utoipa::path(delete, path = "/store/items", tag = "store", request_body = DeleteItem,
    responses((status = 204, description = "Deleted."), Refusals))]
async fn delete_item(
    State(app): State<Arc<App>>,
    Body(req): Body<DeleteItem>,
) -> Result<StatusCode, ApiError> {
    app.store
        .delete(&labels(&req.namespace), &req.key)
        .await
        .map_err(store_error)?;
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /store/items/search`.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct Search {
    #[serde(default)]
    namespace_prefix: Vec<String>,
    #[serde(default)]
    filter: Option<Value>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    offset: Option<usize>,
    #[serde(default)]
    query: Option<String>,
    #[serde(default)]
    refresh_ttl: Option<bool>,
}

/// Items under a namespace prefix, filtered, ranked by `query` with an index.
#[utoipa::path(post, path = "/store/items/search", tag = "store", request_body = Search,
    responses((status = 200, description = "The items.", body = SearchItems), Refusals))]
async fn search(
    State(app): State<Arc<App>>,
    Body(req): Body<Search>,
) -> Result<Json<SearchItems>, ApiError> {
    let filter = match &req.filter {
        None | Some(Value::Null) => None,
        Some(f) => {
            Some(Filter::parse(f).map_err(|e| ApiError::invalid("$.filter", e.to_string()))?)
        }
    };
    let query = SearchQuery {
        filter,
        query: req.query,
        limit: req.limit.unwrap_or(10).min(1000),
        offset: req.offset.unwrap_or(0),
        refresh_ttl: req.refresh_ttl,
    };
    let hits = app
        .store
        .search(&labels(&req.namespace_prefix), query)
        .await
        .map_err(store_error)?;
    let items = hits.iter().map(|h| Item::of(&h.item, h.score)).collect();
    Ok(Json(SearchItems { items }))
}

/// `POST /store/namespaces`.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct NamespaceSearch {
    #[serde(default)]
    prefix: Option<Vec<String>>,
    #[serde(default)]
    suffix: Option<Vec<String>>,
    #[serde(default)]
    max_depth: Option<usize>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    offset: Option<usize>,
}

/// The namespaces in the store, by prefix, suffix and depth.
#[utoipa::path(post, path = "/store/namespaces", tag = "store", request_body = NamespaceSearch,
    responses((status = 200, description = "The namespaces.", body = Namespaces), Refusals))]
async fn namespaces(
    State(app): State<Arc<App>>,
    Body(req): Body<NamespaceSearch>,
) -> Result<Json<Namespaces>, ApiError> {
    let query = NamespaceQuery {
        prefix: req.prefix,
        suffix: req.suffix,
        max_depth: req.max_depth,
        limit: req.limit.unwrap_or(100).min(1000),
        offset: req.offset.unwrap_or(0),
    };
    let list = app
        .store
        .list_namespaces(query)
        .await
        .map_err(store_error)?;
    Ok(Json(Namespaces { namespaces: list }))
}
