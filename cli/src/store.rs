//! `stategraph store`: list, read, search and delete the items of a long-term memory
//! store (`stategraph_sqlite::SqliteStore` or `stategraph_postgres::PostgresStore`).
//!
//! A namespace is written as its labels separated by `/`: `users/u-42/prefs`. Labels
//! cannot contain `.` (no store accepts one), and on the command line they cannot
//! contain `/` either: an item whose namespace has a label with `/` is listed and
//! searched (its namespace shown as labels joined by `/` in tables, as a list in
//! `--json`) but cannot be named by `get` or `rm`; use the library for it.

use std::time::SystemTime;

use clap::Subcommand;
use serde::Serialize;
use serde_json::Value;
use stategraph::store::{
    Filter, Item, Namespace, NamespaceQuery, SearchItem, SearchQuery, Store, StoreError,
};

use crate::error::CliError;
use crate::layout::{self, Columns};
use crate::render::json_line;

/// The `store` subcommands.
#[derive(Clone, Debug, PartialEq, Eq, Subcommand)]
pub enum StoreCommand {
    /// List the namespaces that hold items.
    Ls {
        /// Only namespaces under this one (labels separated by `/`; `*` matches any
        /// one label).
        #[arg(long, value_name = "NS")]
        prefix: Option<String>,
        /// At most N namespaces.
        #[arg(long, short = 'n', value_name = "N", default_value_t = 100)]
        limit: usize,
    },
    /// Show one item.
    Get {
        /// Its namespace (labels separated by `/`).
        namespace: String,
        /// Its key.
        key: String,
    },
    /// List the items under a namespace prefix, newest first.
    Search {
        /// The labels the items' namespaces start with (separated by `/`; "" for
        /// every namespace).
        namespace_prefix: String,
        /// Only items whose value matches this filter, e.g. '{"status": "open",
        /// "score": {"$gte": 3}}'.
        #[arg(long, value_name = "JSON")]
        filter: Option<String>,
        /// At most N items.
        #[arg(long, short = 'n', value_name = "N", default_value_t = 10)]
        limit: usize,
        /// Skip the first N items.
        #[arg(long, value_name = "N", default_value_t = 0)]
        offset: usize,
    },
    /// Delete one item.
    Rm {
        /// Its namespace (labels separated by `/`).
        namespace: String,
        /// Its key.
        key: String,
    },
}

/// `store ls`: the namespaces.
#[derive(Clone, Debug, Serialize)]
pub struct NamespacesReport {
    /// The store, as the user named it.
    pub store: String,
    /// Each namespace, as its labels.
    pub namespaces: Vec<Namespace>,
}

/// `store get`: one item.
#[derive(Clone, Debug, Serialize)]
pub struct ItemReport {
    /// The store, as the user named it.
    pub store: String,
    /// The item.
    pub item: Item,
}

/// `store search`: the items found.
#[derive(Clone, Debug, Serialize)]
pub struct SearchReport {
    /// The store, as the user named it.
    pub store: String,
    /// The prefix searched.
    pub namespace_prefix: Namespace,
    /// The hits, newest first.
    pub items: Vec<SearchItem>,
}

/// `store rm`: the deleted item.
#[derive(Clone, Debug, Serialize)]
pub struct RemoveReport {
    /// The store, as the user named it.
    pub store: String,
    /// The deleted item's namespace.
    pub namespace: Namespace,
    /// Its key.
    pub key: String,
}

/// The labels of `text` (separated by `/`); `""` is the empty namespace.
pub fn parse_namespace(text: &str) -> Namespace {
    if text.is_empty() {
        return Vec::new();
    }
    text.split('/').map(str::to_owned).collect()
}

/// A namespace as the command line writes it.
pub fn show_namespace(namespace: &[String]) -> String {
    namespace.join("/")
}

fn labels(namespace: &[String]) -> Vec<&str> {
    namespace.iter().map(String::as_str).collect()
}

/// Runs `command` on `store` (named `target` in reports and messages); the report
/// as JSON when `json`, else as text fitting `width`.
///
/// # Errors
/// [`CliError::BadFilter`] for a filter that is not JSON or not in the filter
/// language, [`CliError::BadNamespace`] for an invalid namespace or key,
/// [`CliError::UnknownItem`] for `get` or `rm` of a missing item, and
/// [`CliError::StoreFailed`] when the store fails.
pub async fn run(
    command: &StoreCommand,
    store: &dyn Store,
    target: &str,
    json: bool,
    width: usize,
) -> Result<String, CliError> {
    let store_name = target.to_string();
    match command {
        StoreCommand::Ls { prefix, limit } => {
            let mut query = NamespaceQuery::new().limit(*limit);
            query.prefix = prefix.as_deref().map(parse_namespace);
            let namespaces = store.list_namespaces(query).await.map_err(failed)?;
            let report = NamespacesReport {
                store: store_name,
                namespaces,
            };
            output(json, &report, |r| namespaces_text(r, width))
        }
        StoreCommand::Get { namespace, key } => {
            let item = find(store, target, namespace, key).await?;
            let report = ItemReport {
                store: store_name,
                item,
            };
            output(json, &report, |r| item_text(r, width))
        }
        StoreCommand::Search {
            namespace_prefix,
            filter,
            limit,
            offset,
        } => {
            // Looking must not change what is looked at: no time-to-live refresh.
            let mut query = SearchQuery::new()
                .limit(*limit)
                .offset(*offset)
                .refresh_ttl(false);
            if let Some(text) = filter {
                query = query.filter(parse_filter(text)?);
            }
            let prefix = parse_namespace(namespace_prefix);
            let items = store
                .search(&labels(&prefix), query)
                .await
                .map_err(failed)?;
            let report = SearchReport {
                store: store_name,
                namespace_prefix: prefix,
                items,
            };
            output(json, &report, |r| search_text(r, width))
        }
        StoreCommand::Rm { namespace, key } => {
            let item = find(store, target, namespace, key).await?;
            let labels = labels(&item.namespace);
            store.delete(&labels, key).await.map_err(failed)?;
            let report = RemoveReport {
                store: store_name,
                namespace: item.namespace.clone(),
                key: item.key,
            };
            output(json, &report, |r| {
                format!(
                    "deleted `{}` from namespace {}\n",
                    r.key,
                    show_namespace(&r.namespace)
                )
            })
        }
    }
}

/// The item at `namespace`/`key`, read without refreshing its time-to-live (looking
/// must not change what is looked at).
async fn find(
    store: &dyn Store,
    target: &str,
    namespace: &str,
    key: &str,
) -> Result<Item, CliError> {
    let labels_owned = parse_namespace(namespace);
    let op = stategraph::store::StoreOp::Get {
        namespace: labels_owned,
        key: key.to_string(),
        refresh_ttl: Some(false),
    };
    let out = store.batch(vec![op]).await.map_err(failed)?;
    match out.into_iter().next() {
        Some(stategraph::store::StoreOutput::Item(Some(item))) => Ok(item),
        _ => Err(CliError::UnknownItem {
            namespace: namespace.to_string(),
            key: key.to_string(),
            target: target.to_string(),
        }),
    }
}

/// The filter in `text`, which must be a JSON object in the filter language.
fn parse_filter(text: &str) -> Result<Filter, CliError> {
    let value: Value = serde_json::from_str(text).map_err(|e| CliError::BadFilter {
        filter: text.to_string(),
        reason: format!("it is not JSON ({e})"),
    })?;
    Filter::parse(&value).map_err(|e| CliError::BadFilter {
        filter: text.to_string(),
        reason: e.to_string(),
    })
}

/// A store failure, or a namespace or key the store refused.
fn failed(e: StoreError) -> CliError {
    match e {
        StoreError::InvalidNamespace { .. } | StoreError::InvalidKey { .. } => {
            CliError::BadNamespace { source: e }
        }
        other => CliError::StoreFailed { source: other },
    }
}

fn output<T: Serialize>(
    json: bool,
    report: &T,
    text: impl FnOnce(&T) -> String,
) -> Result<String, CliError> {
    if json {
        let mut encoded = serde_json::to_string_pretty(report).map_err(|e| CliError::Io {
            action: "write the output",
            source: std::io::Error::other(e),
        })?;
        encoded.push('\n');
        Ok(encoded)
    } else {
        Ok(text(report))
    }
}

/// A time as RFC 3339 (UTC, milliseconds).
fn when(time: SystemTime) -> String {
    humantime::format_rfc3339_millis(time).to_string()
}

fn namespaces_text(report: &NamespacesReport, width: usize) -> String {
    if report.namespaces.is_empty() {
        return "no namespaces\n".to_string();
    }
    let rows: Vec<Vec<String>> = report
        .namespaces
        .iter()
        .map(|ns| vec![show_namespace(ns), ns.len().to_string()])
        .collect();
    Columns::new(&["NAMESPACE", "DEPTH"], &[0]).render(&rows, width)
}

fn item_text(report: &ItemReport, width: usize) -> String {
    let item = &report.item;
    let mut rows = vec![
        vec!["namespace".to_string(), show_namespace(&item.namespace)],
        vec!["key".to_string(), item.key.clone()],
        vec!["created".to_string(), when(item.created_at)],
        vec!["updated".to_string(), when(item.updated_at)],
        vec![
            "expires".to_string(),
            item.expires_at.map_or_else(|| "never".to_string(), when),
        ],
    ];
    let mut text = Columns::new(&["FIELD", "VALUE"], &[1]).render(&rows, width);
    rows.clear();
    text.push('\n');
    let pretty =
        serde_json::to_string_pretty(&item.value).unwrap_or_else(|_| json_line(&item.value));
    for line in pretty.lines() {
        text.push_str(&layout::fit(line, width));
    }
    text
}

fn search_text(report: &SearchReport, width: usize) -> String {
    if report.items.is_empty() {
        return format!(
            "no items under {}\n",
            if report.namespace_prefix.is_empty() {
                "any namespace".to_string()
            } else {
                format!("namespace {}", show_namespace(&report.namespace_prefix))
            }
        );
    }
    let rows: Vec<Vec<String>> = report
        .items
        .iter()
        .map(|hit| {
            vec![
                show_namespace(&hit.item.namespace),
                hit.item.key.clone(),
                when(hit.item.updated_at),
                json_line(&hit.item.value),
            ]
        })
        .collect();
    Columns::new(&["NAMESPACE", "KEY", "UPDATED", "VALUE"], &[3]).render(&rows, width)
}
