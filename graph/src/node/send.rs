//! `Send`: run a node on its own payload in the next superstep (map-reduce fan-out).
//!
//! Kept in its own module: the type shares its name with `std::marker::Send`.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use super::naming::NodeRef;
use crate::state::GraphState;

/// Runs a node on its own input in the next superstep (LangGraph's `Send`): map-reduce
/// fan-out. The payload's type is checked against the target node's input.
///
/// Not in the prelude, so it does not shadow `std::marker::Send`; write
/// `stategraph::Send::new(..)`.
///
/// ```
/// use stategraph::prelude::*;
///
/// #[derive(GraphState, Clone, Debug, Default)]
/// struct Lengths {
///     words: Vec<String>,
///     #[reducer(append)]
///     lengths: Vec<usize>,
/// }
///
/// #[node]
/// fn split(_: &Lengths) -> Option<LengthsUpdate> {
///     None
/// }
///
/// /// A `Send` target: its input is one word, not the state.
/// #[node]
/// fn measure(word: &String) -> LengthsUpdate {
///     Lengths::update().lengths([word.len()])
/// }
///
/// let graph = StateGraph::<Lengths>::new()
///     .add_node(split)
///     .add_node(measure)
///     .add_edge(START, split)
///     .add_conditional_edges(
///         split,
///         |s: &Lengths| Route::sends(s.words.iter().map(|w| stategraph::Send::new(measure, w.clone()))),
///         [measure],
///     )
///     .compile()?;
/// let input = Lengths::update().words(vec!["map".to_string(), "reduce".to_string()]);
/// let out = graph.invoke_blocking(input, &RunConfig::new())?;
/// assert_eq!(out.values.lengths, [3, 6]); // in the order the sends were emitted
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Send<S> {
    pub(crate) node: Arc<str>,
    pub(crate) payload: Arc<dyn Any + std::marker::Send + Sync>,
    _marker: std::marker::PhantomData<fn() -> S>,
}

impl<S: GraphState> Send<S> {
    /// Runs `node` on `payload`.
    pub fn new<N: NodeRef<S>>(node: N, payload: impl IntoPayload<N::Input>) -> Self {
        Self {
            node: node.node_name(),
            payload: Arc::new(payload.into_payload()),
            _marker: std::marker::PhantomData,
        }
    }

    pub(crate) fn from_parts(
        node: Arc<str>,
        payload: Arc<dyn Any + std::marker::Send + Sync>,
    ) -> Self {
        Self {
            node,
            payload,
            _marker: std::marker::PhantomData,
        }
    }

    /// The target node's name.
    pub fn node(&self) -> &str {
        &self.node
    }
}

impl<S> Clone for Send<S> {
    fn clone(&self) -> Self {
        Self {
            node: self.node.clone(),
            payload: self.payload.clone(),
            _marker: std::marker::PhantomData,
        }
    }
}

impl<S> fmt::Debug for Send<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Send({})", self.node)
    }
}

/// Converts a value into a `Send` target's payload type.
#[diagnostic::on_unimplemented(
    message = "a value of type `{Self}` cannot be sent to a node whose input is `{T}`",
    label = "expected `{T}`"
)]
pub trait IntoPayload<T> {
    /// Performs the conversion.
    fn into_payload(self) -> T;
}

impl<T> IntoPayload<T> for T {
    fn into_payload(self) -> T {
        self
    }
}
