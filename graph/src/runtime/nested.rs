//! Running a subgraph inside a task of its parent: the child's run shares the
//! parent's thread (and, by default, its saver) under a namespace path, takes no lock
//! of its own (the parent holds the thread's), and continues where it stopped when
//! the task runs again after an interrupt or a crash.

use std::any::Any;
use std::sync::Arc;

use super::child_events::ChildEvents;
use super::config::{Durability, Nested, RunConfig, RunInput};
use super::error::RunError;
use super::run_loop::Loop;
use crate::checkpoint::CheckpointSaver;
use crate::compile::Graph;
use crate::node::{Command, Interrupt, NodeContext};
use crate::state::GraphState;
use crate::stream::Emitter;

/// Events a child's run buffers before it waits for its parent's stream.
const CHILD_EVENTS: usize = 64;

/// Separates the segments of a namespace path (as LangGraph's `checkpoint_ns`).
pub(crate) const NS_SEP: char = '|';

/// What a graph with subgraphs hands its subgraph tasks about the run (through
/// `NodeContext`): where checkpoints go and how.
pub(crate) struct Scope {
    saver: Option<Arc<dyn CheckpointSaver>>,
    ns: String,
    durability: Durability,
    recursion_limit: usize,
    /// The run's id and extra metadata, recorded in its children's checkpoints too.
    run_id: Option<String>,
    extra: serde_json::Map<String, serde_json::Value>,
    /// Where children's events go, when the run streams with `SUBGRAPHS`.
    events: Option<ChildEvents>,
    /// The store this run's nodes reach (children without one of their own use it).
    store: Option<Arc<dyn crate::store::Store>>,
}

impl<S: GraphState> Loop<'_, S> {
    /// The scope of this run's tasks; `None` (nothing allocated) in a graph without
    /// subgraphs.
    pub(super) fn scope(
        &self,
        tasks: &[super::frontier::Task],
        keys: &[Arc<str>],
    ) -> Option<Arc<dyn Any + Send + Sync>> {
        if !self.g.has_subgraphs {
            return None;
        }
        // The step's subgraph tasks, in task order: their streamed events keep it.
        let children = tasks
            .iter()
            .zip(keys)
            .filter(|(t, _)| self.g.nodes[t.node].child.is_some())
            .map(|(_, k)| k.clone())
            .collect();
        Some(Arc::new(Scope {
            saver: self.persist.as_ref().map(|p| p.saver.clone()),
            ns: self
                .persist
                .as_ref()
                .map(|p| p.ns.clone())
                .unwrap_or_default(),
            durability: self.config.durability,
            recursion_limit: self.config.recursion_limit,
            run_id: self.config.run_id.clone(),
            extra: self.config.extra.clone(),
            events: ChildEvents::of(self.emitter.as_ref(), children),
            store: self.store(),
        }))
    }

    /// The store this run's nodes reach: a subgraph's own, else its parent's.
    pub(super) fn store(&self) -> Option<Arc<dyn crate::store::Store>> {
        match &self.config.nested {
            Some(nested) => nested.store.clone(),
            None => self.g.store.clone(),
        }
    }
}

/// How a child run ended.
pub(crate) enum ChildEnd<C> {
    /// It finished with this state.
    Done(C),
    /// It paused; the task reports this interrupt (the first, by id, of the child's).
    Paused(Interrupt),
    /// A node of it handed control to the parent (`Command::parent`).
    Handoff(crate::node::Handoff),
}

/// The namespace segment of a task: `{node}:{digest of the task's key}`, the same
/// every time the task runs.
fn segment(ctx: &NodeContext) -> String {
    segment_for(&ctx.node, &ctx.task_key)
}

/// The namespace segment of the task of `node` whose key is `task_key`
/// (`{thread}:{checkpoint}:{task id}`).
pub(crate) fn segment_for(node: &str, task_key: &str) -> String {
    use sha2::{Digest, Sha256};
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha256::digest(task_key.as_bytes());
    // Built in place: a `format!` per byte cost more than the digest itself, once per
    // subgraph task.
    let mut out = String::with_capacity(node.len() + 17);
    out.push_str(node);
    out.push(':');
    for b in digest.iter().take(8) {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0xf)]));
    }
    out
}

/// `segment` under namespace `parent`.
pub(crate) fn join_ns(parent: &str, segment: String) -> String {
    if parent.is_empty() {
        segment
    } else {
        format!("{parent}{NS_SEP}{segment}")
    }
}

/// Runs `child` for the task `ctx` describes. With `inherit`, the child's checkpoints
/// go to the parent's saver under the task's namespace, so a re-run of the task
/// continues the child (finished child tasks are not run again); otherwise the child
/// runs in memory from its input each time.
pub(crate) async fn run_child<C: GraphState>(
    child: &Graph<C>,
    ctx: &NodeContext,
    input: C::Update,
    inherit: bool,
) -> Result<ChildEnd<C>, RunError> {
    let scope = ctx.scope.as_ref().and_then(|s| s.downcast_ref::<Scope>());
    let ns = join_ns(scope.map_or("", |s| s.ns.as_str()), segment(ctx));
    let mut config = RunConfig::new();
    config.thread_id = ctx.thread_id.clone();
    config.provided = ctx.provided.clone();
    if let Some(scope) = scope {
        config.durability = scope.durability;
        config.recursion_limit = scope.recursion_limit;
        config.run_id.clone_from(&scope.run_id);
        config.extra.clone_from(&scope.extra);
    }
    config.nested = Some(Nested {
        saver: scope.and_then(|s| s.saver.clone()).filter(|_| inherit),
        ns: ns.clone(),
        store: child
            .store
            .clone()
            .or_else(|| scope.and_then(|s| s.store.clone())),
    });
    let events = scope.and_then(|s| s.events.clone());
    let (emitter, rx) = match &events {
        Some(events) => {
            let (tx, rx) = tokio::sync::mpsc::channel(CHILD_EVENTS);
            let emitter = Emitter {
                tx,
                modes: events.modes,
            };
            (Some(emitter), Some(rx))
        }
        None => (None, None),
    };
    let mut lp = match Loop::start(child, &config, emitter).await {
        Ok(lp) => lp,
        Err(e) => {
            if let Some(events) = &events {
                events.ended(&ctx.task_key).await;
            }
            return Err(e);
        }
    };
    // A child with a checkpoint in its namespace ran before for this task: it
    // continues, answering its first waiting interrupt with the task's latest answer.
    let input = match &lp.persist {
        Some(p) if p.parent.is_some() => {
            let waiting = p.waiting.values().map(|i| &i.id).min();
            match (waiting, ctx.resume_values().last()) {
                (Some(id), Some(answer)) => {
                    RunInput::Command(Command::resume_map([(id.clone(), answer.clone())]))
                }
                _ => RunInput::Continue,
            }
        }
        _ => RunInput::Update(input),
    };
    let result = match (events, rx) {
        // The child's events go to the parent's stream while the child runs.
        (Some(events), Some(mut rx)) => {
            let mut run = std::pin::pin!(lp.run(input));
            let result = loop {
                tokio::select! {
                    biased;
                    Some(event) = rx.recv() => {
                        if let Ok(event) = event {
                            events.forward(&ctx.task_key, &ns, event).await;
                        }
                    }
                    out = &mut run => break out,
                }
            };
            while let Ok(event) = rx.try_recv() {
                if let Ok(event) = event {
                    events.forward(&ctx.task_key, &ns, event).await;
                }
            }
            events.ended(&ctx.task_key).await;
            result
        }
        _ => lp.run(input).await,
    };
    let out = match result {
        Ok(out) => out,
        Err(RunError::ParentCommand { handoff, .. }) => return Ok(ChildEnd::Handoff(handoff)),
        Err(e) => return Err(e),
    };
    match out.interrupts.into_iter().min_by(|a, b| a.id.cmp(&b.id)) {
        Some(mut interrupt) => {
            if interrupt.ns.is_empty() {
                interrupt.ns = ns;
            }
            Ok(ChildEnd::Paused(interrupt))
        }
        None => Ok(ChildEnd::Done(out.values)),
    }
}

#[cfg(test)]
mod tests {
    use sha2::{Digest, Sha256};

    /// Namespaces are stored: the segment stays `{node}:` and the first 8 bytes of the
    /// key's SHA-256 as lower-case hex.
    #[test]
    fn a_segment_is_the_node_and_the_key_digest_in_hex() {
        for (node, key) in [("research", "1:research"), ("s0", "0:s0:send3"), ("x", "")] {
            let digest = Sha256::digest(key.as_bytes());
            let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
            assert_eq!(super::segment_for(node, key), format!("{node}:{hex}"));
        }
        assert_eq!(
            super::segment_for("n", "k"),
            "n:8254c329a92850f6",
            "sha256(\"k\") starts 8254c329a92850f6"
        );
    }
}
