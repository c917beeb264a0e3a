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
use crate::node::{BoxFuture, NodeContext, NodeError, NodeOutput, NodeResult, Runner, TaskInput};
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

/// Where a finished task's outcome is recorded (pending writes, with a checkpointer).
pub(crate) trait TaskSink<S: GraphState>: Send {
    /// The task succeeded.
    fn done<'a>(
        &'a mut self,
        task: usize,
        output: &'a NodeOutput<S>,
    ) -> BoxFuture<'a, Result<(), RunError>>;
    /// The task failed (after its retries).
    fn failed<'a>(
        &'a mut self,
        task: usize,
        error: &'a NodeError,
    ) -> BoxFuture<'a, Result<(), RunError>>;
}

/// Runs the tasks without a recorded output; returns every output in task order.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn execute<S: GraphState>(
    g: &Graph<S>,
    tasks: &[Task],
    state: &S,
    step: usize,
    config: &RunConfig,
    mut results: Vec<Option<NodeOutput<S>>>,
    mut sink: Option<&mut dyn TaskSink<S>>,
    durations: &mut Vec<std::time::Duration>,
) -> Result<Vec<NodeOutput<S>>, RunError> {
    let fail = |node: &CompiledNode<S>, source| RunError::Node {
        node: node.name.to_string(),
        step,
        source,
    };
    results.resize_with(tasks.len(), || None);
    durations.clear();
    durations.resize(tasks.len(), std::time::Duration::ZERO);
    let limit = config.max_concurrency.unwrap_or(usize::MAX);
    let mut in_flight = FuturesUnordered::new();
    let mut started = 0;
    loop {
        while started < tasks.len() && in_flight.len() < limit {
            let i = started;
            started += 1;
            if results[i].is_some() {
                continue;
            }
            let task = &tasks[i];
            let node = &g.nodes[task.node];
            let input = input_of(task, state);
            let span = tracing::debug_span!("task", node = %node.name);
            if let (Runner::Sync(f), None) = (&node.runner, &node.retry) {
                let ctx = context(node, step, 1, config);
                let started_at = std::time::Instant::now();
                let result = span.in_scope(|| f(input, &ctx));
                durations[i] = started_at.elapsed();
                match result {
                    Ok(out) => {
                        if let Some(sink) = sink.as_deref_mut() {
                            sink.done(i, &out).await?;
                        }
                        results[i] = Some(out);
                    }
                    Err(e) => {
                        if let Some(sink) = sink.as_deref_mut() {
                            sink.failed(i, &e).await?;
                        }
                        return Err(fail(node, e));
                    }
                }
            } else {
                in_flight.push(
                    async move {
                        let started_at = std::time::Instant::now();
                        let result = run_task(node, input, step, config).await;
                        (i, result, started_at.elapsed())
                    }
                    .instrument(span),
                );
            }
        }
        match in_flight.next().await {
            Some((i, result, took)) => {
                durations[i] = took;
                let node = &g.nodes[tasks[i].node];
                match result {
                    Ok(out) => {
                        if let Some(sink) = sink.as_deref_mut() {
                            sink.done(i, &out).await?;
                        }
                        results[i] = Some(out);
                    }
                    Err(e) => {
                        if let Some(sink) = sink.as_deref_mut() {
                            sink.failed(i, &e).await?;
                        }
                        return Err(fail(node, e));
                    }
                }
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
