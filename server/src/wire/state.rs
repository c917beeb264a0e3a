//! Snapshots in the wire shape of LangGraph Platform's `ThreadState`.

use serde_json::Value;
use stategraph::state::state_to_json;
use stategraph::{GraphState, StateSnapshot, SubgraphState, TaskSnapshot};

use super::{Checkpoint, Interrupt, ThreadState, ThreadTask};

fn interrupts(list: &[stategraph::Interrupt]) -> Vec<Interrupt> {
    list.iter().map(Interrupt::from).collect()
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

fn task_of(t: &TaskSnapshot, raised: &[stategraph::Interrupt], level: &str) -> ThreadTask {
    let own: Vec<_> = raised
        .iter()
        .filter(|i| raised_by(t, i, level))
        .cloned()
        .collect();
    ThreadTask {
        id: t.id.clone(),
        name: t.node.clone(),
        path: Vec::new(),
        error: t.error.clone(),
        interrupts: interrupts(&own),
        checkpoint: None,
        state: t.state.as_deref().map(|s| Box::new(subgraph_state(s))),
        result: None,
    }
}

fn subgraph_state(s: &SubgraphState) -> ThreadState {
    let mut values = Value::Object(s.values.clone());
    super::chat::untyped_output(&mut values);
    ThreadState {
        values,
        next: s.next.clone(),
        tasks: s
            .tasks
            .iter()
            .map(|t| task_of(t, &s.interrupts, &s.ns))
            .collect(),
        metadata: serde_json::to_value(&s.metadata).unwrap_or_default(),
        created_at: Some(s.created_at.clone()),
        checkpoint: Checkpoint::from(&s.config),
        parent_checkpoint: s.parent_config.as_ref().map(Checkpoint::from),
        checkpoint_id: None,
        parent_checkpoint_id: None,
        interrupts: interrupts(&s.interrupts),
        deferred: None,
    }
}

/// A snapshot as `ThreadState` (messages in LangChain's shape).
pub(crate) fn thread_state<S: GraphState>(s: &StateSnapshot<S>) -> ThreadState {
    let mut values = state_to_json(&s.values)
        .unwrap_or_else(|e| serde_json::json!({ "__error__": e.to_string() }));
    super::chat::output::<S>(&mut values);
    ThreadState {
        values,
        next: s.next.clone(),
        tasks: s
            .tasks
            .iter()
            .map(|t| task_of(t, &s.interrupts, ""))
            .collect(),
        metadata: serde_json::to_value(&s.metadata).unwrap_or_default(),
        created_at: Some(s.created_at.clone()),
        checkpoint: Checkpoint::from(&s.config),
        parent_checkpoint: s.parent_config.as_ref().map(Checkpoint::from),
        checkpoint_id: Some(s.config.checkpoint_id.clone()),
        parent_checkpoint_id: Some(
            s.parent_config
                .as_ref()
                .and_then(|c| c.checkpoint_id.clone()),
        ),
        interrupts: interrupts(&s.interrupts),
        deferred: Some(s.deferred.clone()),
    }
}
