//! The traits that name a node: [`NodeRef`] (a node of a graph over `S`, with its
//! input type) and [`NamedNode`] (a node of any graph, by name).

use std::any::Any;
use std::sync::Arc;

use crate::state::GraphState;

/// Anything that names a node of a graph over `S` whose input is `Self::Input`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a node of a graph over `{S}`",
    label = "this node belongs to a graph with another state type",
    note = "nodes are made with `#[node]` (their first parameter is `&{S}` or a `Send` payload, and they return `{S}`'s update type) or added with `add_node_fn`"
)]
pub trait NodeRef<S: GraphState> {
    /// The node's input: `S`, or the payload type of a `Send` target.
    type Input: Any + Send + Sync;
    /// The node's name.
    fn node_name(&self) -> Arc<str>;
}

/// Anything that names a node, of any graph: used where node names are configured
/// outside a typed builder (breakpoints).
pub trait NamedNode {
    /// The node's name.
    fn name_of(&self) -> Arc<str>;
}
