//! Snapshots in the wire shape of LangGraph Platform's `ThreadState`.

use serde_json::{Value, json};
use stategraph::state::state_to_json;
use stategraph::{GraphState, StateSnapshot, SubgraphState, TaskSnapshot};

use crate::events::{config_json, interrupts_json};

/// A checkpoint's `{thread_id, checkpoint_ns, checkpoint_id}`.
pub(crate) fn checkpoint_ref(c: &stategraph::checkpoint::CheckpointConfig) -> Value {
    json!({
        "thread_id": c.thread_id,
        "checkpoint_ns": c.checkpoint_ns,
        "checkpoint_id": c.checkpoint_id,
        "checkpoint_map": null,
    })
}

fn task_json(t: &TaskSnapshot, interrupts: &[stategraph::Interrupt]) -> Value {
    let own: Vec<_> = interrupts
        .iter()
        .filter(|i| i.node == t.node && i.ns.is_empty())
        .cloned()
        .collect();
    json!({
        "id": t.id,
        "name": t.node,
        "path": [],
        "error": t.error,
        "interrupts": interrupts_json(&own),
        "checkpoint": null,
        "state": t.state.as_deref().map(subgraph_json),
        "result": null,
    })
}

fn subgraph_json(s: &SubgraphState) -> Value {
    let mut values = Value::Object(s.values.clone());
    super::chat::untyped_output(&mut values);
    json!({
        "values": values,
        "next": s.next,
        "tasks": s.tasks.iter().map(|t| task_json(t, &s.interrupts)).collect::<Vec<_>>(),
        "checkpoint": checkpoint_ref(&s.config),
        "interrupts": interrupts_json(&s.interrupts),
        "metadata": null,
        "created_at": null,
        "parent_checkpoint": null,
    })
}

/// `ThreadState`: values, next, tasks, checkpoint, metadata, interrupts.
pub(crate) fn snapshot_json<S: GraphState>(s: &StateSnapshot<S>) -> Value {
    let mut values =
        state_to_json(&s.values).unwrap_or_else(|e| json!({ "__error__": e.to_string() }));
    super::chat::output::<S>(&mut values);
    json!({
        "values": values,
        "next": s.next,
        "tasks": s.tasks.iter().map(|t| task_json(t, &s.interrupts)).collect::<Vec<_>>(),
        "metadata": s.metadata,
        "created_at": s.created_at,
        "checkpoint": checkpoint_ref(&s.config),
        "parent_checkpoint": s.parent_config.as_ref().map(checkpoint_ref),
        "checkpoint_id": s.config.checkpoint_id,
        "parent_checkpoint_id": s.parent_config.as_ref().and_then(|c| c.checkpoint_id.clone()),
        "interrupts": interrupts_json(&s.interrupts),
        "deferred": s.deferred,
    })
}

/// The `checkpoints` event shape's config, re-exported for update responses.
pub(crate) fn update_response(c: &stategraph::checkpoint::CheckpointConfig) -> Value {
    json!({ "checkpoint": checkpoint_ref(c), "configurable": config_json(c)["configurable"] })
}
