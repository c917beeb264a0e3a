//! Retry policies: exponential backoff without jitter, bounded attempts, and a
//! predicate choosing which errors are worth retrying.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::node::NodeError;

type RetryPredicate = Arc<dyn Fn(&NodeError) -> bool + Send + Sync>;

/// How a failing node is retried. Interrupts are never retried.
///
/// The wait before attempt `n + 1` is `initial_interval * backoff_factor^(n - 1)`,
/// capped at `max_interval`. There is no jitter, so runs are reproducible.
///
/// ```
/// use std::time::Duration;
/// use stategraph::prelude::*;
///
/// #[derive(GraphState, Clone, Debug, Default)]
/// struct Fetch {
///     attempts: u32,
/// }
///
/// /// Fails twice, then succeeds.
/// #[node]
/// fn flaky(_: &Fetch, ctx: &NodeContext) -> Result<FetchUpdate, NodeError> {
///     if ctx.attempt() < 3 {
///         return Err(NodeError::msg("connection reset"));
///     }
///     Ok(Fetch::update().attempts(ctx.attempt()))
/// }
///
/// let policy = RetryPolicy::new()
///     .max_attempts(5)
///     .initial_interval(Duration::from_millis(1))
///     .backoff_factor(2.0)
///     .retry_on(|e| e.to_string().contains("connection"));
/// assert_eq!(policy.delay_after(3), Duration::from_millis(4));
///
/// let graph = StateGraph::<Fetch>::new()
///     .add_node(flaky)
///     .add_edge(START, flaky)
///     .retry(flaky, policy)
///     .compile()?;
/// let out = graph.invoke_blocking(Fetch::update(), &RunConfig::new())?;
/// assert_eq!(out.values.attempts, 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct RetryPolicy {
    pub(crate) max_attempts: u32,
    pub(crate) initial_interval: Duration,
    pub(crate) backoff_factor: f64,
    pub(crate) max_interval: Duration,
    pub(crate) retry_on: RetryPredicate,
}

impl Default for RetryPolicy {
    /// 3 attempts, 500 ms then doubling, at most 128 s apart, on every error.
    fn default() -> Self {
        Self {
            max_attempts: 3,
            initial_interval: Duration::from_millis(500),
            backoff_factor: 2.0,
            max_interval: Duration::from_secs(128),
            retry_on: Arc::new(|_| true),
        }
    }
}

impl RetryPolicy {
    /// The default policy (see [`Default`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// Total attempts, counting the first (at least 1).
    #[must_use]
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }

    /// Wait before the second attempt.
    #[must_use]
    pub fn initial_interval(mut self, interval: Duration) -> Self {
        self.initial_interval = interval;
        self
    }

    /// Multiplier applied to the wait after each failed attempt (at least 1).
    #[must_use]
    pub fn backoff_factor(mut self, factor: f64) -> Self {
        self.backoff_factor = if factor.is_finite() {
            factor.max(1.0)
        } else {
            1.0
        };
        self
    }

    /// Upper bound of any wait.
    #[must_use]
    pub fn max_interval(mut self, interval: Duration) -> Self {
        self.max_interval = interval;
        self
    }

    /// Retries only errors for which `predicate` returns true.
    #[must_use]
    pub fn retry_on(
        mut self,
        predicate: impl Fn(&NodeError) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.retry_on = Arc::new(predicate);
        self
    }

    /// The wait after failed attempt number `attempt` (1-based).
    pub fn delay_after(&self, attempt: u32) -> Duration {
        let exp = i32::try_from(attempt.saturating_sub(1)).unwrap_or(i32::MAX);
        let secs = self.initial_interval.as_secs_f64() * self.backoff_factor.powi(exp);
        if !secs.is_finite() || secs >= self.max_interval.as_secs_f64() {
            self.max_interval
        } else {
            Duration::from_secs_f64(secs)
        }
    }

    pub(crate) fn should_retry(&self, attempt: u32, error: &NodeError) -> bool {
        attempt < self.max_attempts && (self.retry_on)(error)
    }
}

impl fmt::Debug for RetryPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryPolicy")
            .field("max_attempts", &self.max_attempts)
            .field("initial_interval", &self.initial_interval)
            .field("backoff_factor", &self.backoff_factor)
            .field("max_interval", &self.max_interval)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_is_exponential_and_capped() {
        let p = RetryPolicy::new()
            .initial_interval(Duration::from_millis(100))
            .backoff_factor(3.0)
            .max_interval(Duration::from_secs(1));
        assert_eq!(p.delay_after(1), Duration::from_millis(100));
        assert_eq!(p.delay_after(2), Duration::from_millis(300));
        assert_eq!(p.delay_after(3), Duration::from_millis(900));
        assert_eq!(p.delay_after(4), Duration::from_secs(1));
        assert_eq!(p.delay_after(u32::MAX), Duration::from_secs(1));
    }

    #[test]
    fn attempts_and_predicate_bound_retries() {
        let p = RetryPolicy::new()
            .max_attempts(2)
            .retry_on(|e| e.to_string() == "flaky");
        assert!(p.should_retry(1, &NodeError::msg("flaky")));
        assert!(!p.should_retry(2, &NodeError::msg("flaky")));
        assert!(!p.should_retry(1, &NodeError::msg("fatal")));
        assert_eq!(RetryPolicy::new().max_attempts(0).max_attempts, 1);
    }
}
