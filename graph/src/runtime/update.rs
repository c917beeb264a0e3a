//! Writing a thread's state from outside a run: `update_state` and
//! `update_state_as`, as a node, as the input (`START`) or as the end (`END`).

use std::any::Any;

use super::algo::lookup;
use super::config::RunConfig;
use super::error::{ContinueReason, RunError};
use super::run_loop::Loop;
use crate::builder::Endpoint;
use crate::checkpoint::CheckpointSource;
use crate::compile::CompiledGraph;
use crate::node::{End, NodeDef, NodeHandle, NodeRef, Start};
use crate::state::GraphState;

/// Whom an [`update_state_as`](CompiledGraph::update_state_as) update is written as:
/// a node of the graph (what follows it runs next), [`START`](crate::START) (as the
/// run's input: what follows `START` runs next) or [`END`](crate::END) (the thread
/// ends: nothing runs next).
pub trait UpdateAs<S: GraphState> {
    /// The endpoint the update is written as.
    fn update_as(&self) -> Endpoint;
}

impl<S: GraphState, I: Any + Send + Sync> UpdateAs<S> for NodeDef<S, I> {
    fn update_as(&self) -> Endpoint {
        Endpoint::Node(self.node_name())
    }
}

impl<S: GraphState, I: Any + Send + Sync> UpdateAs<S> for NodeHandle<S, I> {
    fn update_as(&self) -> Endpoint {
        Endpoint::Node(self.node_name())
    }
}

impl<S: GraphState, N: UpdateAs<S>> UpdateAs<S> for &N {
    fn update_as(&self) -> Endpoint {
        (**self).update_as()
    }
}

/// A writer named at run time (e.g. `as_node` in a request); an unknown node is
/// refused by the update.
impl<S: GraphState> UpdateAs<S> for Endpoint {
    fn update_as(&self) -> Endpoint {
        self.clone()
    }
}

impl<S: GraphState> UpdateAs<S> for Start {
    fn update_as(&self) -> Endpoint {
        Endpoint::Start
    }
}

impl<S: GraphState> UpdateAs<S> for End {
    fn update_as(&self) -> Endpoint {
        Endpoint::End
    }
}

/// Who an update from outside a run is written as.
pub(super) enum Writer {
    /// The run's input: what follows `START` is next.
    Input,
    /// A node: what follows it is next.
    Node(usize),
    /// The end: nothing is next.
    End,
}

impl<S: GraphState> CompiledGraph<S> {
    /// Writes `update` to the thread as if `as_node` had returned it: through the
    /// reducers, into a new `update` checkpoint whose next tasks are what follows
    /// `as_node` (its edges, joins and routers). Applied to the thread's latest
    /// checkpoint, or to the one `config` names (a new branch from it). `as_node` may
    /// also be [`START`](crate::START) — the update is new input, what follows
    /// `START` is next — or [`END`](crate::END): the update is recorded and nothing
    /// is next (the thread is finished, pending interrupts included). The update
    /// checkpoint is one step past the one it applies to; on a thread without a
    /// checkpoint, step 0.
    ///
    /// ```
    /// use stategraph::prelude::*;
    ///
    /// #[derive(GraphState, Clone, Debug, Default)]
    /// struct Essay {
    ///     draft: String,
    ///     #[reducer(append)]
    ///     log: Vec<String>,
    /// }
    ///
    /// #[node]
    /// fn draft(_: &Essay) -> EssayUpdate {
    ///     Essay::update().draft("first try").log(["drafted"])
    /// }
    ///
    /// #[node]
    /// fn proofread(e: &Essay) -> EssayUpdate {
    ///     Essay::update().log([format!("proofread {:?}", e.draft)])
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let graph = StateGraph::<Essay>::new()
    ///     .add_node(draft)
    ///     .add_node(proofread)
    ///     .add_edge(START, draft)
    ///     .add_edge(draft, proofread)
    ///     .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()).interrupt_before([proofread]))?;
    /// let thread = RunConfig::new().thread("essay");
    /// graph.invoke(Essay::update(), &thread).await?; // stops before `proofread`
    ///
    /// // A human rewrites the draft, as if `draft` had written it; `proofread` is next.
    /// graph.update_state_as(&thread, Essay::update().draft("second try").log(["edited"]), draft).await?;
    /// let state = graph.get_state(&thread).await?.ok_or("saved")?;
    /// assert_eq!(state.next, ["proofread"]);
    ///
    /// let out = graph.invoke(None, &thread).await?;
    /// assert_eq!(out.values.log, ["drafted", "edited", "proofread \"second try\""]);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// No checkpointer or thread id, an unknown node, rejected writes, or a checkpoint
    /// failure.
    pub async fn update_state_as(
        &self,
        config: &RunConfig,
        update: S::Update,
        as_node: impl UpdateAs<S>,
    ) -> Result<crate::checkpoint::CheckpointConfig, RunError> {
        self.write_state(config, update, Some(as_node.update_as()))
            .await
    }

    /// [`CompiledGraph::update_state_as`] as the node that wrote last on the thread
    /// (with no node run yet: as the run's input, so `next` is what follows `START`).
    ///
    /// ```
    /// use stategraph::prelude::*;
    ///
    /// #[derive(GraphState, Clone, Debug, Default)]
    /// struct Tally {
    ///     #[reducer(add)]
    ///     n: i64,
    /// }
    ///
    /// #[node]
    /// fn count(_: &Tally) -> TallyUpdate {
    ///     Tally::update().n(1)
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let graph = StateGraph::<Tally>::new()
    ///     .add_node(count)
    ///     .add_edge(START, count)
    ///     .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))?;
    /// let thread = RunConfig::new().thread("tally");
    /// graph.invoke(Tally::update(), &thread).await?;
    ///
    /// // Written through the reducer (`add`), as `count` (the last writer): nothing is
    /// // left to run, the correction is simply recorded.
    /// graph.update_state(&thread, Tally::update().n(41)).await?;
    /// let state = graph.get_state(&thread).await?.ok_or("saved")?;
    /// assert_eq!(state.values.n, 42);
    /// assert!(state.next.is_empty());
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As `update_state_as`.
    pub async fn update_state(
        &self,
        config: &RunConfig,
        update: S::Update,
    ) -> Result<crate::checkpoint::CheckpointConfig, RunError> {
        self.write_state(config, update, None).await
    }

    async fn write_state(
        &self,
        config: &RunConfig,
        update: S::Update,
        as_node: Option<Endpoint>,
    ) -> Result<crate::checkpoint::CheckpointConfig, RunError> {
        if self.graph.saver.is_none() {
            return Err(RunError::NothingToContinue {
                reason: ContinueReason::NoCheckpointer {
                    needed_by: "`update_state`",
                },
            });
        }
        write_state_of(&self.graph, config, update, as_node).await
    }
}

/// `update_state` on graph `g` (a subgraph's too, when `config` is nested).
pub(crate) async fn write_state_of<S: GraphState>(
    g: &crate::compile::Graph<S>,
    config: &RunConfig,
    update: S::Update,
    as_node: Option<Endpoint>,
) -> Result<crate::checkpoint::CheckpointConfig, RunError> {
    let mut lp = Loop::open(g, config, false, None).await?;
    let writer = match as_node {
        Some(Endpoint::Node(name)) => Writer::Node(lookup(g, &name, "update_state")?),
        Some(Endpoint::Start) => Writer::Input,
        Some(Endpoint::End) => Writer::End,
        None => lp.last_writer()?.map_or(Writer::Input, Writer::Node),
    };
    // A thread without a checkpoint counts as step -1, so its first update
    // checkpoint is step 0, one past it (as in LangGraph).
    if lp.persist.as_ref().is_some_and(|p| p.parent.is_none()) {
        lp.step = 0;
    }
    lp.apply_as(writer, update)?;
    lp.save(CheckpointSource::Update).await?;
    lp.finish().await?;
    let p = lp.persist.as_ref().ok_or(RunError::MissingThreadId)?;
    Ok(p.at(p.parent.clone()))
}
