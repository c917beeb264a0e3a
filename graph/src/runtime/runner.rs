//! Running one superstep's tasks: plain sync nodes inline, everything else polled
//! concurrently on the invoking task (bounded by `max_concurrency`). The first error
//! drops the in-flight futures, which cancels them; an interrupt lets the others
//! finish. A node that panics fails like a node that returns an error
//! ([`NodePanic`]): the panic stops at the task, not at the caller.

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::{Duration, Instant};

use std::panic::AssertUnwindSafe;

use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use tracing::Instrument;

use super::config::RunConfig;
use super::error::{NodePanic, RunError};
use super::frontier::Task;
use crate::compile::{CompiledNode, Graph};
use crate::node::answer::Pause;
use crate::node::{
    BoxFuture, Interrupt, NodeContext, NodeError, NodeOutput, NodeResult, Runner, TaskInput,
};
use crate::state::GraphState;

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
    /// The task paused (at `pause`, when the node paused itself).
    fn interrupted<'a>(
        &'a mut self,
        task: usize,
        interrupt: &'a Interrupt,
        pause: Option<&'a Pause>,
    ) -> BoxFuture<'a, Result<(), RunError>>;
    /// Whether a finished task's outcome is held back, to be stored with what follows
    /// (the step's checkpoint) if nothing else of the step runs first.
    fn holding(&self) -> bool {
        false
    }
    /// Stores what is held back: called before any other task of the step runs or is
    /// awaited.
    fn store_held(&mut self) -> BoxFuture<'_, Result<(), RunError>> {
        Box::pin(async { Ok(()) })
    }
}

/// Stores what the sink holds back before more of the step runs.
async fn store_held<S: GraphState>(
    sink: &mut Option<&mut dyn TaskSink<S>>,
) -> Result<(), RunError> {
    match sink.as_deref_mut() {
        Some(sink) if sink.holding() => sink.store_held().await,
        _ => Ok(()),
    }
}

/// What a step's tasks are run with.
pub(crate) struct StepTasks<'a, S: GraphState> {
    pub(crate) tasks: &'a [Task],
    /// Per task: the key interrupt ids derive from.
    pub(crate) keys: &'a [Arc<str>],
    /// Per task: resume values for its `interrupt` calls.
    pub(crate) resume: &'a [Arc<[serde_json::Value]>],
    /// Per task: an output already known (saved writes), or an unanswered interrupt.
    pub(crate) known: Vec<Known<S>>,
    /// Where `NodeContext::emit` sends custom events.
    pub(crate) custom: Option<crate::stream::LiveSink>,
    /// The resume values of a task without any (shared, empty).
    pub(crate) no_resume: Arc<[serde_json::Value]>,
    /// What subgraph tasks need of the run (see `NodeContext::scope`).
    pub(crate) scope: Option<Arc<dyn std::any::Any + Send + Sync>>,
    /// The store the tasks reach (`NodeContext::store`).
    pub(crate) store: Option<Arc<dyn crate::store::Store>>,
}

/// A task whose outcome is already known.
pub(crate) enum Known<S: GraphState> {
    Run,
    Output(NodeOutput<S>),
    /// Writes reused from the node cache: recorded like a finished task's.
    Cached(NodeOutput<S>),
    Waiting(Interrupt),
}

/// Per task of a step: whether its output was served from the node cache, or was
/// taken from writes saved before. Empty (no allocation) when no task was either.
pub(crate) struct Marks {
    cached: Vec<bool>,
    resumed: Vec<bool>,
}

impl Marks {
    /// From the step's cache hits (empty when no task is cache-enabled) and what
    /// was known of each task before it ran.
    pub(crate) fn new<S: GraphState>(cached: Vec<bool>, known: &[Known<S>]) -> Self {
        let resumed = if known.iter().any(|k| matches!(k, Known::Output(_))) {
            known
                .iter()
                .map(|k| matches!(k, Known::Output(_)))
                .collect()
        } else {
            Vec::new()
        };
        Self { cached, resumed }
    }

    /// Whether task `i` was served from the cache.
    pub(crate) fn cached(&self, i: usize) -> bool {
        self.cached.get(i).copied().unwrap_or(false)
    }

    /// Whether task `i`'s writes were saved before this run.
    pub(crate) fn resumed(&self, i: usize) -> bool {
        self.resumed.get(i).copied().unwrap_or(false)
    }
}

/// The outcome of a step's tasks.
pub(crate) struct Outcome<S: GraphState> {
    /// Outputs in task order (`None`: the task is waiting on an interrupt).
    pub(crate) outputs: Vec<Option<NodeOutput<S>>>,
    pub(crate) interrupts: Vec<(usize, Interrupt)>,
    pub(crate) durations: Vec<Duration>,
    /// The task that failed (its siblings were cancelled), with the run's error.
    pub(crate) failure: Option<(usize, RunError)>,
    /// The first task (in task order) that paused again because its answer did not
    /// decode: the run pauses, then fails with this error.
    /// (Boxed: an outcome is moved every step, and a refusal is rare.)
    pub(crate) refused: Option<Box<(usize, RunError)>>,
}

fn input_of<'a, S>(task: &'a Task, state: &'a S) -> TaskInput<'a, S> {
    match &task.payload {
        Some(p) => TaskInput::Payload(&**p),
        None => TaskInput::State(state),
    }
}

struct TaskEnv<'a> {
    step: usize,
    attempt: u32,
    config: &'a RunConfig,
    key: Option<&'a Arc<str>>,
    resume: &'a Arc<[serde_json::Value]>,
    custom: &'a Option<crate::stream::LiveSink>,
    scope: &'a Option<Arc<dyn std::any::Any + Send + Sync>>,
    store: &'a Option<Arc<dyn crate::store::Store>>,
}

fn context<S: GraphState>(node: &CompiledNode<S>, env: &TaskEnv<'_>) -> NodeContext {
    NodeContext {
        node: node.name.clone(),
        step: env.step,
        attempt: env.attempt,
        thread_id: env.config.thread_id.clone(),
        task_key: env.key.cloned().unwrap_or_else(|| Arc::from("")),
        resume: env.resume.clone(),
        interrupts_called: AtomicUsize::new(0),
        custom: env.custom.clone(),
        scope: env.scope.clone(),
        store: env.store.clone(),
        provided: env.config.provided.clone(),
    }
}

/// Calls a sync node body; a panic becomes the node's error.
fn call_sync<S: GraphState>(
    f: &crate::node::SyncRunner<S>,
    input: TaskInput<'_, S>,
    ctx: &NodeContext,
) -> NodeResult<S> {
    std::panic::catch_unwind(AssertUnwindSafe(|| f(input, ctx)))
        .unwrap_or_else(|p| Err(panicked(p)))
}

/// Calls an async node body; a panic (making or polling its future) becomes the
/// node's error.
async fn call_async<S: GraphState>(
    f: &crate::node::AsyncRunner<S>,
    input: TaskInput<'_, S>,
    ctx: &NodeContext,
) -> NodeResult<S> {
    match std::panic::catch_unwind(AssertUnwindSafe(|| f(input, ctx))) {
        Ok(running) => AssertUnwindSafe(running)
            .catch_unwind()
            .await
            .unwrap_or_else(|p| Err(panicked(p))),
        Err(p) => Err(panicked(p)),
    }
}

fn panicked(payload: Box<dyn std::any::Any + std::marker::Send>) -> NodeError {
    let message = match payload.downcast::<String>() {
        Ok(message) => *message,
        Err(payload) => payload.downcast_ref::<&str>().map_or_else(
            || "(a panic without a message)".to_string(),
            |m| (*m).to_string(),
        ),
    };
    NodeError::new(NodePanic { message })
}

async fn run_task<S: GraphState>(
    node: &CompiledNode<S>,
    input: TaskInput<'_, S>,
    mut env: TaskEnv<'_>,
) -> NodeResult<S> {
    loop {
        let ctx = context(node, &env);
        let result = match &node.runner {
            Runner::Sync(f) => call_sync(&**f, input, &ctx),
            Runner::Async(f) => call_async(&**f, input, &ctx).await,
        };
        match (result, &node.retry) {
            // A panic is a bug, not a passing failure: it is never retried.
            (Err(e), Some(policy))
                if e.as_interrupt().is_none()
                    && e.downcast_ref::<NodePanic>().is_none()
                    && policy.should_retry(env.attempt, &e) =>
            {
                tracing::debug!(node = %node.name, attempt = env.attempt, error = %e, "retrying");
                tokio::time::sleep(policy.wait_after(env.attempt)).await;
                env.attempt += 1;
            }
            (result, _) => return result,
        }
    }
}

/// Records one task's result. A node's failure is returned (it ends the step);
/// `Err` is a failure to record.
async fn settle<S: GraphState>(
    g: &Graph<S>,
    i: usize,
    task: &Task,
    result: NodeResult<S>,
    step: usize,
    sink: &mut Option<&mut dyn TaskSink<S>>,
    outcome: &mut Outcome<S>,
) -> Result<Option<RunError>, RunError> {
    let node = &g.nodes[task.node];
    match result {
        // A hand-off to the parent graph ends this (child) run: nothing of the task
        // is recorded here; the parent applies the command.
        Ok(NodeOutput {
            parent: Some(handoff),
            ..
        }) => Ok(Some(RunError::ParentCommand {
            node: node.name.to_string(),
            handoff,
        })),
        Ok(out) => {
            if let Some(sink) = sink.as_deref_mut() {
                sink.done(i, &out).await?;
            }
            outcome.outputs[i] = Some(out);
            Ok(None)
        }
        Err(e) => match e.as_interrupt() {
            Some(interrupt) => {
                let Some(sink) = sink.as_deref_mut() else {
                    return Err(RunError::InterruptWithoutCheckpointer {
                        node: node.name.to_string(),
                    });
                };
                let pause = crate::node::answer::pause_of(&e);
                sink.interrupted(i, interrupt, pause).await?;
                outcome.interrupts.push((i, interrupt.clone()));
                if let Some(Pause {
                    refused: Some(reason),
                    expects,
                    ..
                }) = pause
                    && outcome.refused.as_ref().is_none_or(|r| i < r.0)
                {
                    let error = RunError::InvalidResume {
                        interrupt: interrupt.id.clone(),
                        node: interrupt.node.clone(),
                        expected: (*expects).to_string(),
                        reason: reason.clone(),
                    };
                    outcome.refused = Some(Box::new((i, error)));
                }
                Ok(None)
            }
            None => {
                if let Some(sink) = sink.as_deref_mut() {
                    sink.failed(i, &e).await?;
                }
                Ok(Some(RunError::Node {
                    node: node.name.to_string(),
                    step,
                    source: e,
                }))
            }
        },
    }
}

/// Runs the tasks whose outcome is not known yet.
pub(crate) async fn execute<S: GraphState>(
    g: &Graph<S>,
    step_tasks: StepTasks<'_, S>,
    state: &S,
    step: usize,
    config: &RunConfig,
    mut sink: Option<&mut dyn TaskSink<S>>,
) -> Result<Outcome<S>, RunError> {
    let StepTasks {
        tasks,
        keys,
        resume,
        known,
        custom,
        no_resume,
        scope,
        store,
    } = step_tasks;
    let mut outcome = Outcome {
        outputs: Vec::with_capacity(tasks.len()),
        interrupts: Vec::new(),
        durations: vec![Duration::ZERO; tasks.len()],
        failure: None,
        refused: None,
    };
    for (i, k) in known.into_iter().enumerate() {
        match k {
            Known::Run => outcome.outputs.push(None),
            Known::Output(out) => outcome.outputs.push(Some(out)),
            Known::Cached(out) => {
                if let Some(sink) = sink.as_deref_mut() {
                    sink.done(i, &out).await?;
                }
                outcome.outputs.push(Some(out));
            }
            Known::Waiting(interrupt) => {
                outcome.outputs.push(None);
                outcome.interrupts.push((i, interrupt));
            }
        }
    }
    let env = |i: usize, attempt: u32| TaskEnv {
        step,
        attempt,
        config,
        key: keys.get(i),
        resume: resume.get(i).unwrap_or(&no_resume),
        custom: &custom,
        scope: &scope,
        store: &store,
    };
    let limit = config.max_concurrency.unwrap_or(usize::MAX);
    // Made on the first task that cannot run inline: most steps of plain sync nodes
    // never need it.
    let mut in_flight = None;
    // The tasks to run, in order: those without an output that are not waiting on
    // an interrupt. (Found by scanning rather than listed up front: a task at or
    // after the cursor has not run, so only the waiting ones have interrupts.)
    let mut cursor = 0;
    let mut next_to_run = |outcome: &Outcome<S>| {
        while cursor < outcome.outputs.len() {
            let i = cursor;
            cursor += 1;
            if outcome.outputs[i].is_none() && !outcome.interrupts.iter().any(|(j, _)| *j == i) {
                return Some(i);
            }
        }
        None
    };
    let mut exhausted = false;
    loop {
        while !exhausted && in_flight.as_ref().map_or(0, FuturesUnordered::len) < limit {
            let Some(i) = next_to_run(&outcome) else {
                exhausted = true;
                break;
            };
            let task = &tasks[i];
            let node = &g.nodes[task.node];
            let input = input_of(task, state);
            let span = tracing::debug_span!("task", node = %node.name);
            if let (Runner::Sync(f), None) = (&node.runner, &node.retry) {
                store_held(&mut sink).await?;
                let ctx = context(node, &env(i, 1));
                let started = Instant::now();
                let result = span.in_scope(|| call_sync(&**f, input, &ctx));
                outcome.durations[i] = started.elapsed();
                if let Some(error) =
                    settle(g, i, task, result, step, &mut sink, &mut outcome).await?
                {
                    outcome.failure = Some((i, error));
                    return Ok(outcome);
                }
            } else {
                let task_env = env(i, 1);
                in_flight.get_or_insert_with(FuturesUnordered::new).push(
                    async move {
                        let started = Instant::now();
                        let result = run_task(node, input, task_env).await;
                        (i, result, started.elapsed())
                    }
                    .instrument(span),
                );
            }
        }
        let next = match in_flight.as_mut() {
            Some(running) if !running.is_empty() => {
                store_held(&mut sink).await?;
                running.next().await
            }
            _ => None,
        };
        match next {
            Some((i, result, took)) => {
                outcome.durations[i] = took;
                if let Some(error) =
                    settle(g, i, &tasks[i], result, step, &mut sink, &mut outcome).await?
                {
                    // Dropping the in-flight futures cancels the siblings.
                    outcome.failure = Some((i, error));
                    return Ok(outcome);
                }
            }
            None if exhausted => break,
            None => {}
        }
    }
    outcome.interrupts.sort_by_key(|(i, _)| *i);
    Ok(outcome)
}
