//! The order of a search's results.

use serde::Deserialize;
use utoipa::ToSchema;

/// `sort_order` of a search.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum SortOrder {
    Asc,
    Desc,
}
