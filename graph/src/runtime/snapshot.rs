//! Reading a thread's state: `get_state` and `get_state_history`.

use crate::checkpoint::{
    CheckpointConfig, CheckpointMetadata, CheckpointTuple, ListOptions, PendingWrite,
};
use crate::compile::CompiledGraph;
use crate::node::Interrupt;
use crate::state::{GraphState, Write};

use super::config::RunConfig;
use super::error::{ContinueReason, RunError};
use super::persist;

/// One task of the step after a checkpoint.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct TaskSnapshot {
    /// The task id.
    pub id: String,
    /// The node it runs.
    pub node: String,
    /// Its error, if it failed.
    pub error: Option<String>,
    /// Whether its writes are saved (it finished and will not run again).
    pub has_writes: bool,
    /// For a task of a subgraph node, the child's state in the task's namespace —
    /// filled by [`CompiledGraph::get_state_subgraphs`](crate::CompiledGraph::get_state_subgraphs) when the child has a
    /// checkpoint.
    pub state: Option<Box<SubgraphState>>,
}

/// A subgraph's state at its latest checkpoint in one task's namespace. Its channel
/// values are JSON (the child's state type is not the parent's).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct SubgraphState {
    /// The namespace (`node:digest`, nested levels joined by `|`).
    pub ns: String,
    /// The child's channels, by name.
    pub values: serde_json::Map<String, serde_json::Value>,
    /// The child's nodes of its next step.
    pub next: Vec<String>,
    /// The child's next step's tasks (a subgraph task among them carries its own
    /// state, and so on down).
    pub tasks: Vec<TaskSnapshot>,
    /// Interrupts the child is waiting on.
    pub interrupts: Vec<Interrupt>,
    /// Names the child's checkpoint.
    pub config: CheckpointConfig,
    /// The child's checkpoint before it, if any.
    pub parent_config: Option<CheckpointConfig>,
    /// The child checkpoint's metadata.
    pub metadata: CheckpointMetadata,
    /// When the child's checkpoint was written (RFC 3339).
    pub created_at: String,
}

/// A thread's state at one checkpoint.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct StateSnapshot<S> {
    /// The channel values (for the latest checkpoint, with the saved writes of finished
    /// tasks of the next step applied).
    pub values: S,
    /// The nodes of the next step, in task order (in the latest view, without those
    /// whose writes are already saved). A deferred node whose trigger waits for
    /// other tasks to finish is not among them: see [`StateSnapshot::deferred`].
    pub next: Vec<String>,
    /// Deferred nodes ([`StateGraph::defer`](crate::StateGraph::defer)) that are
    /// triggered but wait: they run in the first step in which no other task is due,
    /// not in the next one. One entry per waiting task, in task order.
    pub deferred: Vec<String>,
    /// Names this checkpoint.
    pub config: CheckpointConfig,
    /// Its parent, if any.
    pub parent_config: Option<CheckpointConfig>,
    /// Its metadata.
    pub metadata: CheckpointMetadata,
    /// When it was written (RFC 3339).
    pub created_at: String,
    /// The tasks of the next step.
    pub tasks: Vec<TaskSnapshot>,
    /// Interrupts the next step is waiting on (answer them with `Command::resume`).
    pub interrupts: Vec<Interrupt>,
}

/// A stored checkpoint's planned tasks as (node, is a `Send`), split into those the
/// next step runs and the deferred nodes that wait.
fn split_deferred<S: GraphState>(
    g: &crate::compile::Graph<S>,
    next: &[crate::checkpoint::PlannedTask],
) -> (Vec<(String, bool)>, Vec<String>) {
    let index = |p: &crate::checkpoint::PlannedTask| g.index.get(p.node.as_str()).copied();
    let held = super::frontier::holding(g.deferred.as_deref(), next.iter().filter_map(index));
    let waits = |p: &crate::checkpoint::PlannedTask| {
        held.zip(index(p))
            .is_some_and(|(flags, i)| flags.get(i).copied().unwrap_or(false))
    };
    let planned = next
        .iter()
        .filter(|p| !waits(p))
        .map(|p| (p.node.clone(), p.payload.is_some()))
        .collect();
    let deferred = next
        .iter()
        .filter(|p| waits(p))
        .map(|p| p.node.clone())
        .collect();
    (planned, deferred)
}

impl<S: GraphState> CompiledGraph<S> {
    fn saver_for(
        &self,
        config: &RunConfig,
    ) -> Result<(&dyn crate::checkpoint::CheckpointSaver, String), RunError> {
        let saver = self
            .graph
            .saver
            .as_deref()
            .ok_or(RunError::NothingToContinue {
                reason: ContinueReason::NoCheckpointer {
                    needed_by: "reading a thread's state",
                },
            })?;
        let thread = config
            .thread_id
            .as_deref()
            .ok_or(RunError::MissingThreadId)?;
        Ok((saver, thread.to_string()))
    }

    async fn snapshot(
        &self,
        tuple: CheckpointTuple,
        apply_pending: bool,
    ) -> Result<StateSnapshot<S>, RunError> {
        let saver = self
            .graph
            .saver
            .clone()
            .ok_or(RunError::NothingToContinue {
                reason: ContinueReason::NoCheckpointer {
                    needed_by: "reading a thread's state",
                },
            })?;
        snapshot_of(&self.graph, saver, tuple, apply_pending).await
    }

    /// The thread's state at its latest checkpoint (with finished tasks' saved writes
    /// applied), or at the checkpoint `config` names (as stored). `None` for a thread
    /// with no checkpoint.
    ///
    /// A thread is finished when its snapshot has no `tasks` and no `interrupts`.
    /// `next` alone does not tell: it leaves out tasks whose writes are already saved,
    /// so a run stopped after its last task finished but before its step was
    /// committed shows an empty `next` while `invoke(None, ..)` still has a step to
    /// commit.
    ///
    /// ```
    /// use stategraph::prelude::*;
    ///
    /// #[derive(GraphState, Clone, Debug, Default)]
    /// struct Order {
    ///     #[reducer(append)]
    ///     log: Vec<String>,
    /// }
    ///
    /// #[node]
    /// fn pack(_: &Order) -> OrderUpdate {
    ///     Order::update().log(["packed"])
    /// }
    ///
    /// #[node]
    /// fn ship(_: &Order) -> OrderUpdate {
    ///     Order::update().log(["shipped"])
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let graph = StateGraph::<Order>::new()
    ///     .add_node(pack)
    ///     .add_node(ship)
    ///     .add_edge(START, pack)
    ///     .add_edge(pack, ship)
    ///     .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()).interrupt_before([ship]))?;
    /// let thread = RunConfig::new().thread("order-7");
    /// assert!(graph.get_state(&thread).await?.is_none());
    ///
    /// let paused = graph.invoke(Order::update(), &thread).await?; // stops before `ship`
    /// assert_eq!(paused.interrupts.len(), 1);
    /// let state = graph.get_state(&thread).await?.ok_or("saved")?;
    /// assert_eq!(state.values.log, ["packed"]);
    /// assert_eq!(state.next, ["ship"]);
    ///
    /// graph.invoke(None, &thread).await?; // continue
    /// let state = graph.get_state(&thread).await?.ok_or("saved")?;
    /// assert!(state.tasks.is_empty() && state.interrupts.is_empty()); // finished
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// No checkpointer or thread id, or a checkpoint that fails to load.
    pub async fn get_state(
        &self,
        config: &RunConfig,
    ) -> Result<Option<StateSnapshot<S>>, RunError> {
        let (saver, thread) = self.saver_for(config)?;
        let at = persist::config_at(&thread, config.checkpoint_id.clone());
        match saver.get_tuple(&at).await? {
            Some(t) => Ok(Some(
                self.snapshot(t, config.checkpoint_id.is_none()).await?,
            )),
            None => Ok(None),
        }
    }

    /// The thread's checkpoints, newest first, as snapshots (as stored).
    ///
    /// ```
    /// use stategraph::checkpoint::{CheckpointSource, ListOptions};
    /// use stategraph::prelude::*;
    ///
    /// #[derive(GraphState, Clone, Debug, Default)]
    /// struct Steps {
    ///     #[reducer(add)]
    ///     n: u32,
    /// }
    ///
    /// #[node]
    /// fn inc(_: &Steps) -> StepsUpdate {
    ///     Steps::update().n(1)
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let graph = StateGraph::<Steps>::new()
    ///     .add_node(inc)
    ///     .add_edge(START, inc)
    ///     .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))?;
    /// let thread = RunConfig::new().thread("t");
    /// graph.invoke(Steps::update().n(10), &thread).await?;
    ///
    /// let history = graph.get_state_history(&thread, &ListOptions::new()).await?;
    /// let seen: Vec<_> = history.iter().map(|s| (s.metadata.source, s.metadata.step, s.values.n)).collect();
    /// assert_eq!(seen, [(CheckpointSource::Loop, 0, 11), (CheckpointSource::Input, -1, 10)]);
    ///
    /// // Any listed checkpoint can be read again, or run from (a fork).
    /// let input = history[1].config.checkpoint_id.clone().ok_or("listed checkpoints have ids")?;
    /// let again = graph.get_state(&thread.clone().checkpoint(input)).await?.ok_or("exists")?;
    /// assert_eq!(again.next, ["inc"]);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// No checkpointer or thread id, or a checkpoint that fails to load.
    pub async fn get_state_history(
        &self,
        config: &RunConfig,
        options: &ListOptions,
    ) -> Result<Vec<StateSnapshot<S>>, RunError> {
        let (saver, thread) = self.saver_for(config)?;
        let tuples = saver
            .list(&persist::config_at(&thread, None), options)
            .await?;
        let mut out = Vec::with_capacity(tuples.len());
        for t in tuples {
            out.push(self.snapshot(t, false).await?);
        }
        Ok(out)
    }
}

/// The snapshot of `tuple` (a checkpoint of graph `g`, in any namespace of its thread).
pub(crate) async fn snapshot_of<S: GraphState>(
    g: &crate::compile::Graph<S>,
    saver: std::sync::Arc<dyn crate::checkpoint::CheckpointSaver>,
    tuple: CheckpointTuple,
    apply_pending: bool,
) -> Result<StateSnapshot<S>, RunError> {
    let step = tuple.metadata.step.saturating_add(1);
    let reruns = tuple
        .pending_writes
        .iter()
        .filter(|w| w.channel == persist::WRITE_REJECTED)
        .count();
    let reruns = u32::try_from(reruns).unwrap_or(u32::MAX);
    // Saved writes that cannot be applied together (a step cut short before its
    // writes were checked): shown on their tasks, not a failure to read.
    let mut rejected = None;
    let task_info = |id: &str| {
        let own: Vec<&PendingWrite> = tuple
            .pending_writes
            .iter()
            .filter(|w| w.task_id == id)
            .collect();
        // A task with its own saved writes finished, whatever an earlier attempt
        // recorded.
        let has_writes = own.iter().any(|w| {
            !matches!(
                w.channel.as_str(),
                persist::WRITE_ERROR
                    | persist::WRITE_INTERRUPT
                    | persist::WRITE_RESUME
                    | persist::WRITE_REJECTED
            )
        });
        let error = (!has_writes)
            .then(|| own.iter().find(|w| w.channel == persist::WRITE_ERROR))
            .flatten()
            .map(|w| w.value.as_str().unwrap_or_default().to_string());
        (has_writes, error)
    };
    let (values, planned, deferred, interrupts) = if apply_pending {
        // Exactly what a run continuing from here would start from: saved outputs
        // of finished tasks applied, resume commands replayed, interrupts waiting.
        let config = RunConfig::new();
        let lp = super::run_loop::Loop::inspect(g, &config, saver, &tuple).await?;
        let planned: Vec<(String, bool)> = lp
            .next
            .due()
            .map(|(n, payload)| (g.nodes[n].name.to_string(), payload.is_some()))
            .collect();
        let deferred = lp
            .next
            .waiting()
            .map(|n| g.nodes[n].name.to_string())
            .collect();
        let ids =
            super::algo::task_ids(step, reruns, planned.iter().map(|(n, s)| (n.as_str(), *s)));
        // The loop is only read from now on: its state moves out rather than being
        // copied (a large state would otherwise be held twice).
        let mut values = lp.state;
        let mut writes = Vec::new();
        let mut interrupts = Vec::new();
        if let Some(p) = &lp.persist {
            for ((node, _), id) in planned.iter().zip(&ids) {
                if let Some(saved) = p.resumed.get(id) {
                    let saved: Vec<&PendingWrite> = saved.iter().collect();
                    let out = persist::decode_output(
                        g,
                        &tuple.config.thread_id,
                        &tuple.checkpoint.id,
                        &saved,
                    )?;
                    let name: std::sync::Arc<str> = node.as_str().into();
                    writes.extend(out.writes.into_iter().map(|u| Write::new(name.clone(), u)));
                }
                if let Some(i) = p.waiting.get(id) {
                    interrupts.push(i.clone());
                }
            }
        }
        if !writes.is_empty() {
            let mut applied = values.clone();
            match applied.apply_writes(writes) {
                Ok(_) => values = applied,
                Err(source) => {
                    let step = usize::try_from(step).unwrap_or(0);
                    let error = RunError::InvalidUpdate {
                        step: Some(step),
                        source,
                    };
                    rejected = Some(error.to_string());
                }
            }
        }
        (values, planned, deferred, interrupts)
    } else {
        let restored = persist::restore::<S>(&*saver, &tuple, &g.migrations).await?;
        let (planned, deferred) = split_deferred(g, &tuple.checkpoint.next);
        (restored.state, planned, deferred, Vec::new())
    };
    let ids = super::algo::task_ids(step, reruns, planned.iter().map(|(n, s)| (n.as_str(), *s)));
    let mut tasks = Vec::new();
    for ((node, _), id) in planned.iter().zip(ids) {
        let (has_writes, mut error) = task_info(&id);
        if has_writes && rejected.is_some() {
            error.clone_from(&rejected);
        }
        tasks.push(TaskSnapshot {
            id,
            node: node.clone(),
            error,
            has_writes,
            state: None,
        });
    }
    // The latest view leaves out tasks whose writes are already saved; a stored
    // checkpoint shows everything that was planned after it.
    let next = tasks
        .iter()
        .filter(|t| !(apply_pending && t.has_writes))
        .map(|t| t.node.clone())
        .collect();
    Ok(StateSnapshot {
        values,
        next,
        created_at: tuple.checkpoint.ts.clone(),
        config: tuple.config,
        parent_config: tuple.parent_config,
        metadata: tuple.metadata,
        tasks,
        interrupts,
        deferred,
    })
}
