//! Streaming a subgraph's events through its parent's stream (`StreamMode::SUBGRAPHS`):
//! the child's events in their JSON form, tagged with the child's namespace.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::checkpoint::CheckpointError;
use crate::future::BoxFuture;
use crate::state::GraphState;
use crate::state::MessageChunk;
use crate::stream::{Emitter, StreamEvent, StreamMode};

use super::error::RunError;

type Send = Arc<dyn Fn(String, Value) -> BoxFuture<'static, ()> + std::marker::Send + Sync>;
type SendMessage =
    Arc<dyn Fn(i64, String, MessageChunk) -> BoxFuture<'static, ()> + std::marker::Send + Sync>;

/// Where a subgraph task's child sends its events: the parent's stream.
#[derive(Clone)]
pub(crate) struct ChildEvents {
    /// The modes the parent streams (the child streams the same).
    pub(crate) modes: StreamMode,
    /// Sends one child event (namespace, JSON) to the parent's stream.
    send: Send,
    /// Without `SUBGRAPHS` but with `MESSAGES`: the child's message pieces go to
    /// the parent's stream as its own `Message` events (a model's tokens reach a chat
    /// client from any depth, as in LangGraph), and nothing else does.
    messages_only: Option<SendMessage>,
    /// With several subgraph tasks in one step: their events in task order.
    order: Option<Arc<tokio::sync::Mutex<Order>>>,
}

/// The events of a step's subgraph tasks, delivered in task order: the first task's
/// as they happen, each later task's held until every task before it has ended.
struct Order {
    /// The tasks' keys, in task order.
    keys: Vec<Arc<str>>,
    /// The task whose events go out as they happen.
    current: usize,
    held: Vec<Vec<(String, Value)>>,
    ended: Vec<bool>,
}

impl Order {
    /// Takes what may go out now, in order.
    fn ready(&mut self) -> Vec<(String, Value)> {
        let mut out = Vec::new();
        while self.current < self.keys.len() {
            out.append(&mut self.held[self.current]);
            if !self.ended[self.current] {
                break;
            }
            self.current += 1;
        }
        out
    }
}

impl ChildEvents {
    /// For a parent streaming with `SUBGRAPHS` (`None` otherwise), whose step runs
    /// the subgraph tasks with keys `keys`, in task order.
    pub(crate) fn of<S: GraphState>(
        emitter: Option<&Emitter<S>>,
        keys: Vec<Arc<str>>,
    ) -> Option<Self> {
        let em = emitter?;
        if !em.wants(StreamMode::SUBGRAPHS) {
            return em
                .wants(StreamMode::MESSAGES)
                .then(|| Self::messages_only(em));
        }
        let tx = em.tx.clone();
        let tasks = keys.len();
        let order = (tasks > 1).then(|| {
            Arc::new(tokio::sync::Mutex::new(Order {
                keys,
                current: 0,
                held: vec![Vec::new(); tasks],
                ended: vec![false; tasks],
            }))
        });
        Some(Self {
            modes: em.modes,
            send: Arc::new(move |ns, event| {
                let tx = tx.clone();
                Box::pin(async move {
                    let _ = tx.send(Ok(StreamEvent::Subgraph { ns, event })).await;
                })
            }),
            messages_only: None,
            order,
        })
    }

    /// For a parent streaming `MESSAGES` without `SUBGRAPHS`.
    fn messages_only<S: GraphState>(em: &Emitter<S>) -> Self {
        let tx = em.tx.clone();
        Self {
            modes: StreamMode::MESSAGES,
            send: Arc::new(|_, _| Box::pin(async {})),
            messages_only: Some(Arc::new(move |step, node, chunk| {
                let tx = tx.clone();
                Box::pin(async move {
                    let event = StreamEvent::Message { step, node, chunk };
                    let _ = tx.send(Ok(event)).await;
                })
            })),
            order: None,
        }
    }

    /// Forwards one event of the child of task `key`, running in namespace `ns`. A
    /// grandchild's event keeps its own (full) namespace.
    pub(crate) async fn forward<C: GraphState>(&self, key: &str, ns: &str, event: StreamEvent<C>) {
        if let Some(send) = &self.messages_only {
            if let StreamEvent::Message { step, node, chunk } = event {
                send(step, node, chunk).await;
            }
            return;
        }
        let (ns, json) = match event {
            StreamEvent::Subgraph { ns, event } => (ns, event),
            other => (ns.to_string(), event_json(other)),
        };
        let Some(order) = &self.order else {
            (self.send)(ns, json).await;
            return;
        };
        // Held in order and sent under the lock, so no two tasks' events cross.
        let mut order = order.lock().await;
        match order.keys.iter().position(|k| &**k == key) {
            Some(i) if i >= order.current => order.held[i].push((ns, json)),
            _ => (self.send)(ns, json).await,
        }
        for (ns, json) in order.ready() {
            (self.send)(ns, json).await;
        }
    }

    /// The child of task `key` ended (finished, paused or failed): the next task's
    /// held events may go out.
    pub(crate) async fn ended(&self, key: &str) {
        let Some(order) = &self.order else {
            return;
        };
        let mut order = order.lock().await;
        if let Some(i) = order.keys.iter().position(|k| &**k == key) {
            order.ended[i] = true;
        }
        for (ns, json) in order.ready() {
            (self.send)(ns, json).await;
        }
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
        StreamEvent::Message { step, node, chunk } => {
            json!({ "type": "message", "step": step, "node": node, "chunk": chunk })
        }
        StreamEvent::Interrupt { interrupts } => {
            json!({ "type": "interrupt", "interrupts": interrupts })
        }
        StreamEvent::Subgraph { ns, event } => {
            json!({ "type": "subgraph", "ns": ns, "event": event })
        }
    }
}
