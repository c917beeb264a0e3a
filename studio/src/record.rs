//! What a stored checkpoint says about itself, read the same way by the Studio and
//! the `stategraph` command.

use serde_json::Value;
use stategraph::checkpoint::CheckpointTuple;

/// The id of the checkpoint `tuple` follows (`None` for a thread's first).
pub fn parent_id(tuple: &CheckpointTuple) -> Option<String> {
    tuple
        .parent_config
        .as_ref()
        .and_then(|p| p.checkpoint_id.clone())
}

/// Why `tuple` was written, as its stored metadata names it: `input`, `loop`,
/// `update` or `fork`.
pub fn source_name(tuple: &CheckpointTuple) -> String {
    match serde_json::to_value(tuple.metadata.source) {
        Ok(Value::String(s)) => s,
        _ => format!("{:?}", tuple.metadata.source).to_lowercase(),
    }
}
