//! Reading a thread's state: `get_state` and `get_state_history`.

use crate::checkpoint::{
    CheckpointConfig, CheckpointMetadata, CheckpointTuple, ListOptions, PendingWrite,
};
use crate::compile::CompiledGraph;
use crate::node::Interrupt;
use crate::state::{GraphState, Write};

use super::{RunConfig, RunError, persist};

/// One task of the step after a checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
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
}

/// A thread's state at one checkpoint.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct StateSnapshot<S> {
    /// The channel values (for the latest checkpoint, with the saved writes of finished
    /// tasks of the next step applied).
    pub values: S,
    /// The nodes of the next step, in task order (in the latest view, without those
    /// whose writes are already saved).
    pub next: Vec<String>,
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

impl<S: GraphState> CompiledGraph<S> {
    fn saver_for(
        &self,
        config: &RunConfig,
    ) -> Result<(&dyn crate::checkpoint::CheckpointSaver, String), RunError> {
        let saver = self
            .graph
            .saver
            .as_deref()
            .ok_or_else(|| RunError::NothingToContinue {
                reason: "the graph has no checkpointer, so it keeps no state".into(),
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
            .ok_or_else(|| RunError::NothingToContinue {
                reason: "the graph has no checkpointer, so it keeps no state".into(),
            })?;
        let g = &*self.graph;
        let step = tuple.metadata.step.saturating_add(1);
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
                    persist::WRITE_ERROR | persist::WRITE_INTERRUPT | persist::WRITE_RESUME
                )
            });
            let error = (!has_writes)
                .then(|| own.iter().find(|w| w.channel == persist::WRITE_ERROR))
                .flatten()
                .map(|w| w.value.as_str().unwrap_or_default().to_string());
            (has_writes, error)
        };
        let (values, planned, interrupts) = if apply_pending {
            // Exactly what a run continuing from here would start from: saved outputs
            // of finished tasks applied, resume commands replayed, interrupts waiting.
            let config = RunConfig::new();
            let lp = super::Loop::inspect(g, &config, saver, &tuple).await?;
            let planned: Vec<(String, bool)> = lp
                .next
                .planned()
                .into_iter()
                .map(|(n, payload)| (g.nodes[n].name.to_string(), payload.is_some()))
                .collect();
            let ids = super::task_ids(step, planned.iter().map(|(n, s)| (n.as_str(), *s)));
            let mut values = lp.state.clone();
            let mut writes = Vec::new();
            let mut interrupts = Vec::new();
            if let Some(p) = &lp.persist {
                for ((node, _), id) in planned.iter().zip(&ids) {
                    if let Some(saved) = p.resumed.get(id) {
                        let saved: Vec<&PendingWrite> = saved.iter().collect();
                        let out = persist::decode_output(g, &tuple.checkpoint.id, &saved)?;
                        let name: std::sync::Arc<str> = node.as_str().into();
                        writes.extend(out.writes.into_iter().map(|u| Write::new(name.clone(), u)));
                    }
                    if let Some(i) = p.waiting.get(id) {
                        interrupts.push(i.clone());
                    }
                }
            }
            if !writes.is_empty() {
                values
                    .apply_writes(writes)
                    .map_err(|source| RunError::InvalidUpdate { step: None, source })?;
            }
            (values, planned, interrupts)
        } else {
            let restored = persist::restore::<S>(&*saver, &tuple, &g.migrations).await?;
            let planned = tuple
                .checkpoint
                .next
                .iter()
                .map(|p| (p.node.clone(), p.payload.is_some()))
                .collect();
            (restored.state, planned, Vec::new())
        };
        let ids = super::task_ids(step, planned.iter().map(|(n, s)| (n.as_str(), *s)));
        let mut tasks = Vec::new();
        for ((node, _), id) in planned.iter().zip(ids) {
            let (has_writes, error) = task_info(&id);
            tasks.push(TaskSnapshot {
                id,
                node: node.clone(),
                error,
                has_writes,
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
        })
    }

    /// The thread's state at its latest checkpoint (with finished tasks' saved writes
    /// applied), or at the checkpoint `config` names (as stored). `None` for a thread
    /// with no checkpoint.
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
