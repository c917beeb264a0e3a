//! Running one superstep's tasks: plain sync nodes inline, everything else polled
//! concurrently on the invoking task (bounded by `max_concurrency`). The first error
//! drops the in-flight futures, which cancels them.

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use tracing::Instrument;

use super::RunError;
use super::config::RunConfig;
use super::frontier::Task;
use crate::compile::{CompiledNode, Graph};
use crate::node::{NodeContext, NodeOutput, NodeResult, Runner, TaskInput};
use crate::state::GraphState;

fn input_of<'a, S>(task: &'a Task, state: &'a S) -> TaskInput<'a, S> {
    match &task.payload {
        Some(p) => TaskInput::Payload(&**p),
        None => TaskInput::State(state),
    }
}

fn context<S: GraphState>(
    node: &CompiledNode<S>,
    step: usize,
    attempt: u32,
    config: &RunConfig,
) -> NodeContext {
    NodeContext {
        node: node.name.clone(),
        step,
        attempt,
        thread_id: config.thread_id.clone(),
    }
}

async fn run_task<S: GraphState>(
    node: &CompiledNode<S>,
    input: TaskInput<'_, S>,
    step: usize,
    config: &RunConfig,
) -> NodeResult<S> {
    let mut attempt = 1;
    loop {
        let ctx = context(node, step, attempt, config);
        let result = match &node.runner {
            Runner::Sync(f) => f(input, &ctx),
            Runner::Async(f) => f(input, &ctx).await,
        };
        match (result, &node.retry) {
            (Err(e), Some(policy)) if policy.should_retry(attempt, &e) => {
                tracing::debug!(node = %node.name, attempt, error = %e, "retrying");
                tokio::time::sleep(policy.delay_after(attempt)).await;
                attempt += 1;
            }
            (result, _) => return result,
        }
    }
}

/// Runs the tasks; returns their outputs in task order.
pub(crate) async fn execute<S: GraphState>(
    g: &Graph<S>,
    tasks: &[Task],
    state: &S,
    step: usize,
    config: &RunConfig,
) -> Result<Vec<NodeOutput<S>>, RunError> {
    let fail = |node: &CompiledNode<S>, source| RunError::Node {
        node: node.name.to_string(),
        step,
        source,
    };
    let mut results: Vec<Option<NodeOutput<S>>> = Vec::with_capacity(tasks.len());
    results.resize_with(tasks.len(), || None);
    let limit = config.max_concurrency.unwrap_or(usize::MAX);
    let mut in_flight = FuturesUnordered::new();
    let mut started = 0;
    loop {
        while started < tasks.len() && in_flight.len() < limit {
            let i = started;
            started += 1;
            let task = &tasks[i];
            let node = &g.nodes[task.node];
            let input = input_of(task, state);
            let span = tracing::debug_span!("task", node = %node.name);
            if let (Runner::Sync(f), None) = (&node.runner, &node.retry) {
                let ctx = context(node, step, 1, config);
                let out = span
                    .in_scope(|| f(input, &ctx))
                    .map_err(|e| fail(node, e))?;
                results[i] = Some(out);
            } else {
                in_flight.push(
                    async move { (i, run_task(node, input, step, config).await) }.instrument(span),
                );
            }
        }
        match in_flight.next().await {
            Some((i, result)) => {
                let node = &g.nodes[tasks[i].node];
                results[i] = Some(result.map_err(|e| fail(node, e))?);
            }
            None if started >= tasks.len() => break,
            None => {}
        }
    }
    Ok(results
        .into_iter()
        .map(|r| r.unwrap_or_else(NodeOutput::empty))
        .collect())
}
