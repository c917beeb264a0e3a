//! Reading subgraphs' states under their parent: [`CompiledGraph::get_state_subgraphs`]
//! and the [`SubgraphState`] each pending subgraph task carries.

use std::any::Any;
use std::sync::Arc;

use super::error::RunError;
use super::nested::{join_ns, segment_for};
use super::persist;
use super::snapshot::{StateSnapshot, SubgraphState, TaskSnapshot, snapshot_of};
use crate::checkpoint::CheckpointSaver;
use crate::compile::{CompiledGraph, Graph};
use crate::future::BoxFuture;
use crate::shape::{ChildGraph, Topology};
use crate::state::GraphState;

impl<S: GraphState> CompiledGraph<S> {
    /// [`get_state`](CompiledGraph::get_state), with the state of every pending
    /// subgraph task filled in ([`TaskSnapshot::state`]), at every depth — LangGraph's
    /// `get_state(config, subgraphs=True)`. A subgraph waiting on an interrupt shows
    /// it there with its namespace (as it also shows in the parent's `interrupts`).
    ///
    /// # Errors
    /// As `get_state`.
    pub async fn get_state_subgraphs(
        &self,
        config: &super::config::RunConfig,
    ) -> Result<Option<StateSnapshot<S>>, RunError> {
        let Some(mut snapshot) = self.get_state(config).await? else {
            return Ok(None);
        };
        let Some(saver) = self.graph.saver.clone() else {
            return Ok(Some(snapshot));
        };
        let checkpoint = snapshot.config.checkpoint_id.clone().unwrap_or_default();
        let thread = snapshot.config.thread_id.clone();
        fill(
            &self.graph,
            saver,
            &thread,
            "",
            &checkpoint,
            &mut snapshot.tasks,
        )
        .await?;
        Ok(Some(snapshot))
    }
}

impl<P: GraphState> CompiledGraph<P> {
    /// Writes `update` into a subgraph's state, at namespace `ns` of the thread
    /// `config` names — LangGraph's `update_state` with a subgraph's config. `ns` is
    /// one of `subgraph`'s namespaces, as [`Interrupt::ns`](crate::Interrupt::ns) or
    /// [`get_state_subgraphs`](Self::get_state_subgraphs) show it (a child of a child
    /// is reached through its own namespace under this graph). The update is written
    /// as `update_state` writes it: through the child's reducers, as its last
    /// writer, planning what follows that writer. The next run of the parent's task
    /// continues the child from there; a task of the child that was waiting on an
    /// interrupt and is planned again asks again, with a new interrupt id.
    ///
    /// # Errors
    /// No checkpointer or thread id; [`RunError::UnknownSubgraphState`] when `ns` is not one of `subgraph`'s namespaces or the child has no checkpoint
    /// there; or as `update_state`.
    pub async fn update_subgraph_state<Q, C: GraphState>(
        &self,
        config: &super::config::RunConfig,
        subgraph: &crate::node::SubgraphHandle<Q, C>,
        ns: &str,
        update: C::Update,
    ) -> Result<crate::checkpoint::CheckpointConfig, RunError> {
        let saver = self
            .graph
            .saver
            .clone()
            .ok_or(RunError::NothingToContinue {
                reason: super::error::ContinueReason::NoCheckpointer {
                    needed_by: "`update_subgraph_state`",
                },
            })?;
        let thread = config
            .thread_id
            .as_deref()
            .ok_or(RunError::MissingThreadId)?;
        let unknown = || RunError::UnknownSubgraphState {
            subgraph: subgraph.name().to_string(),
            ns: ns.to_string(),
            thread: thread.to_string(),
        };
        // Walk the namespace down from this graph: each segment names a subgraph
        // node of the graph above it; the last one must be `subgraph`.
        let mut children = self.graph.children();
        let mut child = None;
        for segment in ns.split(super::nested::NS_SEP) {
            let node = segment.split_once(':').map_or(segment, |(node, _)| node);
            let found = children
                .iter()
                .find(|(name, _)| &**name == node)
                .map(|(_, c)| c.clone())
                .ok_or_else(unknown)?;
            children = found.children();
            child = Some((node.to_string(), found));
        }
        let Some((last, child)) = child else {
            return Err(unknown());
        };
        if last != subgraph.name() {
            return Err(unknown());
        }
        let Some(g) = child.as_any().downcast_ref::<Graph<C>>() else {
            return Err(unknown());
        };
        let at = super::persist::config_in(thread, ns, None);
        if saver.get_tuple(&at).await?.is_none() {
            return Err(unknown());
        }
        // The parent is not running: this write takes the thread's lock.
        let _lock = saver.lock_thread(thread, config.lock_timeout).await?;
        let mut child_config = super::config::RunConfig::new().thread(thread);
        child_config.nested = Some(super::config::Nested {
            saver: Some(saver),
            ns: ns.to_string(),
            store: None,
        });
        super::update::write_state_of(g, &child_config, update, None).await
    }
}

/// Fills the state of the subgraph tasks among `tasks` (of checkpoint `checkpoint` in
/// namespace `ns`).
fn fill<'a, S: GraphState>(
    g: &'a Graph<S>,
    saver: Arc<dyn CheckpointSaver>,
    thread: &'a str,
    ns: &'a str,
    checkpoint: &'a str,
    tasks: &'a mut [TaskSnapshot],
) -> BoxFuture<'a, Result<(), RunError>> {
    Box::pin(async move {
        for task in tasks {
            let Some(child) = g
                .index
                .get(task.node.as_str())
                .and_then(|&i| g.nodes[i].child.clone())
            else {
                continue;
            };
            let key = format!("{thread}:{checkpoint}:{}", task.id);
            let child_ns = join_ns(ns, segment_for(&task.node, &key));
            let found = child.inspect(saver.clone(), thread, child_ns).await;
            // `inspect` of every compiled graph returns exactly this type.
            if let Ok(state) = found.downcast::<Result<Option<SubgraphState>, RunError>>() {
                task.state = (*state)?.map(Box::new);
            }
        }
        Ok(())
    })
}

async fn child_state<C: GraphState>(
    g: &Graph<C>,
    saver: Arc<dyn CheckpointSaver>,
    thread: &str,
    ns: String,
) -> Result<Option<SubgraphState>, RunError> {
    let at = persist::config_in(thread, &ns, None);
    let Some(tuple) = saver.get_tuple(&at).await? else {
        return Ok(None);
    };
    let snapshot = snapshot_of(g, saver.clone(), tuple, true).await?;
    let values = super::child_events::channels_json(
        &snapshot.values,
        snapshot.config.checkpoint_id.as_deref().unwrap_or_default(),
    )?;
    let checkpoint = snapshot.config.checkpoint_id.clone().unwrap_or_default();
    let mut tasks = snapshot.tasks;
    fill(g, saver, thread, &ns, &checkpoint, &mut tasks).await?;
    let mut interrupts = snapshot.interrupts;
    for interrupt in interrupts.iter_mut().filter(|i| i.ns.is_empty()) {
        interrupt.ns.clone_from(&ns);
    }
    Ok(Some(SubgraphState {
        ns,
        values,
        next: snapshot.next,
        tasks,
        interrupts,
        config: snapshot.config,
        parent_config: snapshot.parent_config,
        metadata: snapshot.metadata,
        created_at: snapshot.created_at,
    }))
}

impl<C: GraphState> ChildGraph for Graph<C> {
    fn topology(&self) -> &Topology {
        &self.topology
    }

    fn version(&self) -> &str {
        &self.version
    }

    fn children(&self) -> Vec<(Arc<str>, Arc<dyn ChildGraph>)> {
        self.nodes
            .iter()
            .filter_map(|n| n.child.clone().map(|c| (n.name.clone(), c)))
            .collect()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn inspect<'a>(
        &'a self,
        saver: Arc<dyn CheckpointSaver>,
        thread: &'a str,
        ns: String,
    ) -> BoxFuture<'a, Box<dyn Any + Send>> {
        Box::pin(async move {
            let state = child_state(self, saver, thread, ns).await;
            Box::new(state) as Box<dyn Any + Send>
        })
    }
}
