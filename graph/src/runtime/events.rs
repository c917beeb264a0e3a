//! Every stream event a run sends is built here, so a new stream mode is one
//! function in this file plus its call. Callers call them only when the run is
//! streamed (so an unstreamed run builds no event future); each sends only the
//! modes the stream wants.

use super::error::RunError;
use super::frontier::Task;
use super::persist;
use super::runner::{Marks, Outcome};
use crate::checkpoint::{CheckpointConfig, CheckpointMetadata};
use crate::compile::Graph;
use crate::node::{Interrupt, NodeOutput, Send};
use crate::state::GraphState;
use crate::stream::{DebugKind, Emitter, StreamEvent, StreamMode};

/// The state after a step (or the input, or what a continued run starts from).
pub(super) async fn values<S: GraphState>(em: &Emitter<S>, step: i64, state: &S) {
    if em.wants(StreamMode::VALUES) {
        em.send(StreamEvent::Values {
            step,
            values: state.clone(),
        })
        .await;
    }
}

/// The run paused on `interrupts`.
pub(super) async fn interrupted<S: GraphState>(em: &Emitter<S>, interrupts: &[Interrupt]) {
    em.send(StreamEvent::Interrupt {
        interrupts: interrupts.to_vec(),
    })
    .await;
}

/// What a checkpoint event carries, taken before the checkpoint is handed to the
/// saver, and only when someone listens.
pub(super) struct CheckpointEvent {
    config: CheckpointConfig,
    parent: CheckpointConfig,
    metadata: CheckpointMetadata,
    next: Vec<String>,
}

impl CheckpointEvent {
    /// `None` (nothing copied) unless the stream wants checkpoints or debug events.
    /// `next` names the nodes the next step runs (as `get_state` shows them).
    pub(super) fn capture<S: GraphState>(
        em: Option<&Emitter<S>>,
        config: impl FnOnce() -> CheckpointConfig,
        parent: &CheckpointConfig,
        metadata: &CheckpointMetadata,
        next: impl FnOnce() -> Vec<String>,
    ) -> Option<Self> {
        em.filter(|em| em.wants(StreamMode::CHECKPOINTS | StreamMode::DEBUG))
            .map(|_| Self {
                config: config(),
                parent: parent.clone(),
                metadata: metadata.clone(),
                next: next(),
            })
    }

    /// Sends it, with the state the checkpoint holds.
    pub(super) async fn send<S: GraphState>(self, em: &Emitter<S>, step: i64, state: &S) {
        let parent_config = self.parent.checkpoint_id.is_some().then_some(self.parent);
        em.send_with_debug(step, DebugKind::Checkpoint, || StreamEvent::Checkpoint {
            config: self.config.clone(),
            parent_config: parent_config.clone(),
            values: state.clone(),
            metadata: self.metadata.clone(),
            next: self.next.clone(),
        })
        .await;
    }
}

/// One task-start event per task of the step, in task order.
pub(super) async fn task_starts<S: GraphState>(
    em: &Emitter<S>,
    g: &Graph<S>,
    step: i64,
    tasks: &[Task],
    ids: &[String],
    marks: &Marks,
) {
    for (i, (task, id)) in tasks.iter().zip(ids).enumerate() {
        let node = g.nodes[task.node].name.to_string();
        let input = task.payload.as_ref().and_then(|p| {
            let send = Send::<S>::from_parts(g.nodes[task.node].name.clone(), p.clone());
            persist::encode_payload(g, &send).ok()
        });
        let triggers: Vec<String> = task.triggers.iter().map(ToString::to_string).collect();
        em.send_with_debug(step, DebugKind::Task, || StreamEvent::TaskStart {
            step,
            id: id.clone(),
            node: node.clone(),
            input: input.clone(),
            triggers: triggers.clone(),
            cached: marks.cached(i),
        })
        .await;
    }
}

/// A paused or failed step is not committed: every task that ended gets its result
/// event (no updates event), in task order.
pub(super) async fn unfinished_results<S: GraphState>(
    em: &Emitter<S>,
    g: &Graph<S>,
    step: i64,
    tasks: &[Task],
    ids: &[String],
    outcome: &Outcome<S>,
    marks: &Marks,
) {
    for (i, (task, id)) in tasks.iter().zip(ids).enumerate() {
        let interrupts: Vec<Interrupt> = outcome
            .interrupts
            .iter()
            .filter(|(j, _)| *j == i)
            .map(|(_, int)| int.clone())
            .collect();
        let error = match &outcome.failure {
            Some((j, RunError::Node { source, .. })) if *j == i => Some(source.to_string()),
            _ => None,
        };
        let Some(result) = outcome.outputs[i]
            .as_ref()
            .map(|o| o.writes.clone())
            .or_else(|| (error.is_some() || !interrupts.is_empty()).then(Vec::new))
        else {
            continue;
        };
        let node = g.nodes[task.node].name.to_string();
        em.send_with_debug(step, DebugKind::TaskResult, || StreamEvent::TaskResult {
            step,
            id: id.clone(),
            node: node.clone(),
            error: error.clone(),
            result: result.clone(),
            interrupts: interrupts.clone(),
            resumed: marks.resumed(i),
            cached: marks.cached(i),
        })
        .await;
    }
}

/// The step's updates per task, copied before they are applied — only when the
/// stream will report them.
pub(super) fn kept_updates<S: GraphState>(
    em: &Emitter<S>,
    outputs: &[Option<NodeOutput<S>>],
) -> Option<Vec<Vec<S::Update>>> {
    em.wants(StreamMode::UPDATES | StreamMode::TASKS | StreamMode::DEBUG)
        .then(|| {
            outputs
                .iter()
                .map(|o| o.as_ref().map(|o| o.writes.clone()).unwrap_or_default())
                .collect()
        })
}

/// After a committed step: per task, its updates event and its result event.
pub(super) async fn committed_results<S: GraphState>(
    em: &Emitter<S>,
    g: &Graph<S>,
    step: i64,
    tasks: &[Task],
    ids: &[String],
    updates: Vec<Vec<S::Update>>,
    marks: &Marks,
) {
    for (i, ((task, id), updates)) in tasks.iter().zip(ids).zip(updates).enumerate() {
        let node = g.nodes[task.node].name.to_string();
        if em.wants(StreamMode::UPDATES) {
            em.send(StreamEvent::Updates {
                step,
                node: node.clone(),
                updates: updates.clone(),
                cached: marks.cached(i),
            })
            .await;
        }
        em.send_with_debug(step, DebugKind::TaskResult, || StreamEvent::TaskResult {
            step,
            id: id.clone(),
            node: node.clone(),
            error: None,
            result: updates.clone(),
            interrupts: Vec::new(),
            resumed: marks.resumed(i),
            cached: marks.cached(i),
        })
        .await;
    }
}
