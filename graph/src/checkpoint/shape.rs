//! Reading the graph shape a thread's checkpoints recorded: what lets a tool that
//! has no user code (the `stategraph` command, the Studio page) draw the graph that
//! wrote a thread.

use super::error::{CheckpointError, SaverResult};
use super::saver::CheckpointSaver;
use super::types::{CheckpointConfig, GRAPH_SHAPE_KEY, ListOptions};
use crate::shape_json::GraphShape;

/// The shape of graph version `graph_version` as thread `thread_id` recorded it, or
/// `None` when none of its root-namespace checkpoints did (checkpoints written
/// before shapes were recorded, or another graph version).
///
/// A run records its graph's [`GraphShape`] under [`GRAPH_SHAPE_KEY`] in the
/// metadata of each root-namespace checkpoint whose graph version differs from its
/// parent's (or that has no parent): once per graph version of the thread, so a
/// thread continued by a changed graph holds both shapes. It is recorded as its
/// JSON text (a string holding the serialized shape), which costs a step one copy
/// of a string rather than of a JSON tree.
///
/// ```
/// use stategraph::checkpoint::{InMemorySaver, recorded_shape};
/// use stategraph::prelude::*;
/// use std::sync::Arc;
///
/// #[derive(GraphState, Clone, Debug, Default)]
/// struct Doc { text: String }
///
/// #[node]
/// fn write(_: &Doc) -> DocUpdate { Doc::update().text("hi") }
///
/// let saver = Arc::new(InMemorySaver::new());
/// let graph = StateGraph::<Doc>::new()
///     .add_node(write).add_edge(START, write).add_edge(write, END)
///     .compile_with(CompileOptions::new().shared_checkpointer(saver.clone()))?;
/// graph.invoke_blocking(Doc::update(), &RunConfig::new().thread("t"))?;
/// let read = |version: &str| futures::executor::block_on(recorded_shape(&*saver, "t", version));
/// assert_eq!(read(graph.graph_version())?, Some(graph.shape()));
/// assert_eq!(read("another version")?, None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// The saver's error when listing fails; [`CheckpointError::Corrupt`] when the
/// recorded shape does not decode.
pub async fn recorded_shape(
    saver: &dyn CheckpointSaver,
    thread_id: &str,
    graph_version: &str,
) -> SaverResult<Option<GraphShape>> {
    let tuples = saver
        .list(&CheckpointConfig::thread(thread_id), &ListOptions::new())
        .await?;
    for tuple in tuples {
        if &*tuple.checkpoint.graph_version != graph_version {
            continue;
        }
        let Some(recorded) = tuple.metadata.extra.get(GRAPH_SHAPE_KEY) else {
            continue;
        };
        // Recorded as the shape's JSON text; a JSON object is read too.
        let decoded = match recorded {
            serde_json::Value::String(text) => serde_json::from_str(text),
            other => <GraphShape as serde::Deserialize>::deserialize(other),
        };
        let shape = decoded.map_err(|source| CheckpointError::Corrupt {
            what: format!(
                "the graph shape recorded in checkpoint {} of thread `{thread_id}`",
                tuple.checkpoint.id
            ),
            source,
        })?;
        return Ok(Some(shape));
    }
    Ok(None)
}
