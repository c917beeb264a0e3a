//! Streaming a subgraph's events through its parent's stream (`StreamMode::SUBGRAPHS`):
//! the child's events in their JSON form, tagged with the child's namespace.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::checkpoint::CheckpointError;
use crate::future::BoxFuture;
use crate::state::GraphState;
use crate::stream::{Emitter, StreamEvent, StreamMode};

use super::error::RunError;

/// Where a subgraph task's child sends its events: the parent's stream.
#[derive(Clone)]
pub(crate) struct ChildEvents {
    /// The modes the parent streams (the child streams the same).
    pub(crate) modes: StreamMode,
    /// Sends one child event (namespace, JSON) to the parent's stream.
    pub(crate) send: Arc<dyn Fn(String, Value) -> BoxFuture<'static, ()> + Send + Sync>,
}

impl ChildEvents {
    /// For a parent streaming with `SUBGRAPHS`; `None` otherwise.
    pub(crate) fn of<S: GraphState>(emitter: Option<&Emitter<S>>) -> Option<Self> {
        let em = emitter.filter(|em| em.wants(StreamMode::SUBGRAPHS))?;
        let tx = em.tx.clone();
        Some(Self {
            modes: em.modes,
            send: Arc::new(move |ns, event| {
                let tx = tx.clone();
                Box::pin(async move {
                    let _ = tx.send(Ok(StreamEvent::Subgraph { ns, event })).await;
                })
            }),
        })
    }

    /// Forwards one event of the child running in namespace `ns`. A grandchild's
    /// event keeps its own (full) namespace.
    pub(crate) async fn forward<C: GraphState>(&self, ns: &str, event: StreamEvent<C>) {
        let (ns, json) = match event {
            StreamEvent::Subgraph { ns, event } => (ns, event),
            other => (ns.to_string(), event_json(other)),
        };
        (self.send)(ns, json).await;
    }
}

/// A state's channels as JSON, by name (untracked channels left out).
pub(crate) fn channels_json<C: GraphState>(
    state: &C,
    checkpoint: &str,
) -> Result<Map<String, Value>, RunError> {
    let mut values = Map::new();
    for info in C::CHANNELS {
        let value = state.encode_channel(info.index).map_err(|source| {
            RunError::Checkpoint(CheckpointError::Channel {
                id: checkpoint.to_string(),
                source,
            })
        })?;
        if let Some(value) = value {
            values.insert(info.name.to_string(), value);
        }
    }
    Ok(values)
}

/// A value that failed to encode stands as `null` in a streamed child event (the
/// child's checkpoints report the failure).
fn values_or_null<C: GraphState>(state: &C) -> Value {
    channels_json(state, "").map_or(Value::Null, Value::Object)
}

fn updates_json<C: GraphState>(updates: &[C::Update]) -> Value {
    Value::Array(
        updates
            .iter()
            .map(|u| C::encode_update(u).unwrap_or(Value::Null))
            .collect(),
    )
}

/// The JSON form of a child's event: the shape `StreamEvent` serializes to, with the
/// child's state and updates encoded by its channel codecs (so the child's state
/// type need not implement `Serialize`).
fn event_json<C: GraphState>(event: StreamEvent<C>) -> Value {
    match event {
        StreamEvent::Values { step, values } => {
            json!({ "type": "values", "step": step, "values": values_or_null(&values) })
        }
        StreamEvent::Updates {
            step,
            node,
            updates,
            cached,
        } => json!({
            "type": "updates", "step": step, "node": node,
            "updates": updates_json::<C>(&updates), "cached": cached,
        }),
        StreamEvent::TaskStart {
            step,
            id,
            node,
            input,
            triggers,
            cached,
        } => json!({
            "type": "task_start", "step": step, "id": id, "node": node,
            "input": input, "triggers": triggers, "cached": cached,
        }),
        StreamEvent::TaskResult {
            step,
            id,
            node,
            error,
            result,
            interrupts,
            resumed,
            cached,
        } => json!({
            "type": "task_result", "step": step, "id": id, "node": node, "error": error,
            "result": updates_json::<C>(&result), "interrupts": interrupts,
            "resumed": resumed, "cached": cached,
        }),
        StreamEvent::Checkpoint {
            config,
            parent_config,
            values,
            metadata,
            next,
        } => json!({
            "type": "checkpoint", "config": config, "parent_config": parent_config,
            "values": values_or_null(&values), "metadata": metadata, "next": next,
        }),
        StreamEvent::Debug {
            step,
            timestamp,
            kind,
            event,
        } => json!({
            "type": "debug", "step": step, "timestamp": timestamp, "kind": kind,
            "event": event_json(*event),
        }),
        StreamEvent::Custom { node, value } => {
            json!({ "type": "custom", "node": node, "value": value })
        }
        StreamEvent::Interrupt { interrupts } => {
            json!({ "type": "interrupt", "interrupts": interrupts })
        }
        StreamEvent::Subgraph { ns, event } => {
            json!({ "type": "subgraph", "ns": ns, "event": event })
        }
    }
}
