//! The superstep loop: plan tasks, run them concurrently, apply their writes in the
//! deterministic task order, then compute the next frontier from edges, joins,
//! routers, `goto`s and `Send`s.

mod config;
mod frontier;
mod tasks;

use std::sync::Arc;

use tracing::Instrument;

pub use config::{RunConfig, RunOutput};
pub use error::RunError;

use crate::compile::{Branch, CompiledGraph, Graph};
use crate::node::{Goto, NodeOutput};
use crate::state::{GraphState, Write};
use frontier::{Frontier, Task};

mod error;

/// The writer name of a run's input in error messages.
const INPUT_WRITER: &str = "__input__";

impl<S: GraphState> CompiledGraph<S> {
    /// Runs the graph from `input` (applied through the reducers to a default state)
    /// until no task is left.
    ///
    /// # Errors
    /// The first failing node's error ([`RunError::Node`]), rejected writes, a route
    /// outside its declared targets, or the recursion limit.
    pub async fn invoke(
        &self,
        input: S::Update,
        config: &RunConfig,
    ) -> Result<RunOutput<S>, RunError> {
        let span = tracing::info_span!("stategraph.run", thread_id = config.thread_id.as_deref());
        run(&self.graph, input, config).instrument(span).await
    }

    /// [`CompiledGraph::invoke`] for callers without an async runtime: runs the graph on
    /// a current-thread tokio runtime.
    ///
    /// # Errors
    /// As `invoke`, plus [`RunError::BlockingInsideRuntime`] when called from inside an
    /// async runtime (use `invoke(..).await` there).
    pub fn invoke_blocking(
        &self,
        input: S::Update,
        config: &RunConfig,
    ) -> Result<RunOutput<S>, RunError> {
        if tokio::runtime::Handle::try_current().is_ok() {
            return Err(RunError::BlockingInsideRuntime);
        }
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .map_err(RunError::Runtime)?;
        rt.block_on(self.invoke(input, config))
    }
}

async fn run<S: GraphState>(
    g: &Graph<S>,
    input: S::Update,
    config: &RunConfig,
) -> Result<RunOutput<S>, RunError> {
    if config.recursion_limit == 0 {
        return Err(RunError::ZeroRecursionLimit);
    }
    let mut state = S::default();
    state
        .apply_writes(vec![Write::new(INPUT_WRITER, input)])
        .map_err(|source| RunError::InvalidUpdate { step: None, source })?;

    let mut next = Frontier::new(g.nodes.len());
    for &t in &g.start_edges {
        next.pull(t);
    }
    for b in &g.start_branches {
        follow_route(g, b, &state, "START", &mut next)?;
    }
    let mut barriers: Vec<Vec<bool>> = g
        .joins
        .iter()
        .map(|j| vec![false; j.sources.len()])
        .collect();

    let mut step = 0;
    loop {
        let tasks = next.take();
        if tasks.is_empty() {
            break;
        }
        if step >= config.recursion_limit {
            return Err(RunError::RecursionLimit {
                limit: config.recursion_limit,
            });
        }
        let span = tracing::debug_span!("superstep", step, tasks = tasks.len());
        superstep(
            g,
            &mut state,
            &tasks,
            step,
            config,
            &mut next,
            &mut barriers,
        )
        .instrument(span)
        .await?;
        step += 1;
    }
    Ok(RunOutput {
        values: state,
        steps: step,
    })
}

async fn superstep<S: GraphState>(
    g: &Graph<S>,
    state: &mut S,
    tasks: &[Task],
    step: usize,
    config: &RunConfig,
    next: &mut Frontier,
    barriers: &mut [Vec<bool>],
) -> Result<(), RunError> {
    let outputs = tasks::execute(g, tasks, state, step, config).await?;

    // A router sees the pre-step state plus its own task's writes. With one task
    // that is the post-step state; otherwise each routing task gets its own view.
    let fresh_views = tasks.len() > 1 && tasks.iter().any(|t| !g.nodes[t.node].branches.is_empty());
    let pre_step = fresh_views.then(|| state.clone());

    let mut writes = Vec::with_capacity(tasks.len());
    let mut gotos: Vec<Vec<Goto<S>>> = Vec::with_capacity(tasks.len());
    let mut own_writes: Vec<Vec<S::Update>> = Vec::new();
    for (task, out) in tasks.iter().zip(outputs) {
        let NodeOutput {
            writes: updates,
            goto,
        } = out;
        let writer = &g.nodes[task.node].name;
        if fresh_views {
            own_writes.push(updates.clone());
        }
        writes.extend(updates.into_iter().map(|u| Write {
            writer: writer.clone(),
            update: u,
        }));
        gotos.push(goto);
    }
    state
        .apply_writes(writes)
        .map_err(|source| RunError::InvalidUpdate {
            step: Some(step),
            source,
        })?;

    for (i, (task, goto)) in tasks.iter().zip(gotos).enumerate() {
        let node = &g.nodes[task.node];
        for &t in &node.edges {
            next.pull(t);
        }
        for &j in &node.joins {
            if let Some(pos) = g.joins[j].sources.iter().position(|&s| s == task.node) {
                barriers[j][pos] = true;
            }
        }
        // A node's own `goto` is emitted before its routers run, so its Sends come first.
        for target in goto {
            schedule(g, target, &node.name, next)?;
        }
        if !node.branches.is_empty() {
            let view = match (&pre_step, own_writes.get(i)) {
                (Some(pre), Some(own)) => {
                    let mut view = pre.clone();
                    let own = own
                        .iter()
                        .cloned()
                        .map(|u| Write {
                            writer: node.name.clone(),
                            update: u,
                        })
                        .collect();
                    view.apply_writes(own)
                        .map_err(|source| RunError::InvalidUpdate {
                            step: Some(step),
                            source,
                        })?;
                    Some(view)
                }
                _ => None,
            };
            for b in &node.branches {
                follow_route(g, b, view.as_ref().unwrap_or(state), &node.name, next)?;
            }
        }
    }
    for (j, seen) in barriers.iter_mut().enumerate() {
        if seen.iter().all(|&s| s) {
            if let Some(t) = g.joins[j].target {
                next.pull(t);
            }
            seen.iter_mut().for_each(|s| *s = false);
        }
    }
    Ok(())
}

fn lookup<S: GraphState>(g: &Graph<S>, name: &Arc<str>, from: &str) -> Result<usize, RunError> {
    g.index
        .get(name)
        .copied()
        .ok_or_else(|| RunError::UnknownNode {
            name: name.to_string(),
            from: from.to_string(),
        })
}

fn schedule<S: GraphState>(
    g: &Graph<S>,
    goto: Goto<S>,
    from: &str,
    next: &mut Frontier,
) -> Result<(), RunError> {
    match goto {
        Goto::End => {}
        Goto::Node(name) => {
            let i = lookup(g, &name, from)?;
            if !g.nodes[i].takes_state {
                return Err(RunError::PayloadNodeWithoutPayload {
                    node: name.to_string(),
                    from: from.to_string(),
                });
            }
            next.pull(i);
        }
        Goto::Send(send) => {
            let i = lookup(g, &send.node, from)?;
            next.push(i, send.payload);
        }
    }
    Ok(())
}

fn follow_route<S: GraphState>(
    g: &Graph<S>,
    branch: &Branch<S>,
    view: &S,
    from: &str,
    next: &mut Frontier,
) -> Result<(), RunError> {
    let route = (branch.router)(view);
    for goto in route.gotos {
        let declared = match &goto {
            Goto::End => branch.declares_end,
            Goto::Node(name) => g
                .index
                .get(name)
                .is_some_and(|i| branch.declared.contains(i)),
            Goto::Send(send) => g
                .index
                .get(&send.node)
                .is_some_and(|i| branch.declared.contains(i)),
        };
        if !declared {
            return Err(RunError::UndeclaredRoute {
                source_node: from.to_string(),
                target: goto.endpoint().to_string(),
                declared: branch.declared_names.clone(),
            });
        }
        schedule(g, goto, from, next)?;
    }
    Ok(())
}
