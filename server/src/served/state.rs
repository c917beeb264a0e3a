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

/// Whether `interrupt` was raised by task `t` of the graph at namespace `level`: by
/// its own node, or inside the subgraph it runs (as LangGraph lists it, on the
/// parent's task too).
fn raised_by(t: &TaskSnapshot, interrupt: &stategraph::Interrupt, level: &str) -> bool {
    let below = if interrupt.ns == level {
        ""
    } else if level.is_empty() {
        interrupt.ns.as_str()
    } else {
        match interrupt
            .ns
            .strip_prefix(level)
            .and_then(|r| r.strip_prefix('|'))
        {
            Some(rest) => rest,
            None => return false,
        }
    };
    let Some(segment) = below.split('|').next().filter(|s| !s.is_empty()) else {
        return interrupt.node == t.node;
    };
    match &t.state {
        Some(child) => child.ns.rsplit('|').next() == Some(segment),
        None => segment
            .strip_prefix(t.node.as_str())
            .is_some_and(|rest| rest.starts_with(':')),
    }
}

fn task_json(t: &TaskSnapshot, interrupts: &[stategraph::Interrupt], level: &str) -> Value {
    let own: Vec<_> = interrupts
        .iter()
        .filter(|i| raised_by(t, i, level))
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
        "tasks": s.tasks.iter().map(|t| task_json(t, &s.interrupts, &s.ns)).collect::<Vec<_>>(),
        "checkpoint": checkpoint_ref(&s.config),
        "interrupts": interrupts_json(&s.interrupts),
        "metadata": s.metadata,
        "created_at": s.created_at,
        "parent_checkpoint": s.parent_config.as_ref().map(checkpoint_ref),
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
        "tasks": s.tasks.iter().map(|t| task_json(t, &s.interrupts, "")).collect::<Vec<_>>(),
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
