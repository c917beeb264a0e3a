//! Per-run configuration and a run's result.

use std::sync::Arc;

/// Configuration of one run.
#[derive(Clone, Debug)]
pub struct RunConfig {
    pub(crate) thread_id: Option<Arc<str>>,
    pub(crate) recursion_limit: usize,
    pub(crate) max_concurrency: Option<usize>,
}

impl Default for RunConfig {
    fn default() -> Self {
        Self {
            thread_id: None,
            recursion_limit: Self::DEFAULT_RECURSION_LIMIT,
            max_concurrency: None,
        }
    }
}

impl RunConfig {
    /// Supersteps a run may take unless configured otherwise.
    pub const DEFAULT_RECURSION_LIMIT: usize = 10_000;

    /// The default configuration.
    pub fn new() -> Self {
        Self::default()
    }

    /// The thread this run belongs to (required once a checkpointer is configured).
    #[must_use]
    pub fn thread(mut self, thread_id: impl Into<Arc<str>>) -> Self {
        self.thread_id = Some(thread_id.into());
        self
    }

    /// Most supersteps the run may take: a run needing exactly `limit` succeeds, one
    /// needing more fails with `RunError::RecursionLimit`. `0` is rejected at run time.
    #[must_use]
    pub fn recursion_limit(mut self, limit: usize) -> Self {
        self.recursion_limit = limit;
        self
    }

    /// Most tasks of one superstep running at once (unbounded by default).
    #[must_use]
    pub fn max_concurrency(mut self, tasks: usize) -> Self {
        self.max_concurrency = Some(tasks.max(1));
        self
    }

    /// The configured thread id.
    pub fn thread_id(&self) -> Option<&str> {
        self.thread_id.as_deref()
    }
}

/// What a finished run returns.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RunOutput<S> {
    /// The final state.
    pub values: S,
    /// Supersteps executed.
    pub steps: usize,
}
