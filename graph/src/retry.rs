//! Retry policies: exponential backoff with jitter, bounded attempts, and a
//! predicate choosing which errors are worth retrying.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::node::NodeError;

type RetryPredicate = Arc<dyn Fn(&NodeError) -> bool + Send + Sync>;

/// How a failing node is retried. Interrupts are never retried.
///
/// The backoff before attempt `n + 1` is `initial_interval * backoff_factor^(n - 1)`,
/// capped at `max_interval` ([`RetryPolicy::delay_after`]). By default a random
/// jitter of up to half the backoff is added to each wait
/// ([`RetryPolicy::wait_after`]), so tasks that failed together (many threads
/// hitting one overloaded service) do not all retry at the same instant — as
/// LangGraph does. Turn it off with `.jitter(false)`, or make it reproducible with
/// `.jitter_seed(seed)`.
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
    pub(crate) jitter: Jitter,
}

/// Where a wait's jitter comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Jitter {
    Off,
    Random,
    Seeded(u64),
}

impl Default for RetryPolicy {
    /// 3 attempts, 500 ms then doubling, at most 128 s apart (plus jitter), on every
    /// error.
    fn default() -> Self {
        Self {
            max_attempts: 3,
            initial_interval: Duration::from_millis(500),
            backoff_factor: 2.0,
            max_interval: Duration::from_secs(128),
            retry_on: Arc::new(|_| true),
            jitter: Jitter::Random,
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

    /// Adds a random jitter of up to half the backoff to each wait (on by default).
    #[must_use]
    pub fn jitter(mut self, on: bool) -> Self {
        self.jitter = if on { Jitter::Random } else { Jitter::Off };
        self
    }

    /// Jitter drawn from `seed` instead of at random: the waits of every run are the
    /// same (for tests and replays).
    #[must_use]
    pub fn jitter_seed(mut self, seed: u64) -> Self {
        self.jitter = Jitter::Seeded(seed);
        self
    }

    /// The wait after failed attempt number `attempt` (1-based): the backoff
    /// ([`RetryPolicy::delay_after`]) plus its jitter, a fraction in `[0, 0.5)` of
    /// the backoff.
    pub fn wait_after(&self, attempt: u32) -> Duration {
        let backoff = self.delay_after(attempt);
        let draw = match self.jitter {
            Jitter::Off => return backoff,
            Jitter::Random => {
                use std::hash::BuildHasher;
                std::collections::hash_map::RandomState::new().hash_one(attempt)
            }
            Jitter::Seeded(seed) => {
                mix(seed ^ u64::from(attempt).wrapping_mul(0x9e37_79b9_7f4a_7c15))
            }
        };
        // The top 53 bits as a fraction in [0, 1).
        let fraction = (draw >> 11) as f64 / (1u64 << 53) as f64;
        backoff.mul_f64(1.0 + fraction / 2.0)
    }

    /// The backoff after failed attempt number `attempt` (1-based), before jitter.
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

/// SplitMix64's finalizer: spreads a seed over all 64 bits.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl fmt::Debug for RetryPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryPolicy")
            .field("max_attempts", &self.max_attempts)
            .field("initial_interval", &self.initial_interval)
            .field("backoff_factor", &self.backoff_factor)
            .field("max_interval", &self.max_interval)
            .field("jitter", &self.jitter)
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
    fn jitter_adds_up_to_half_the_backoff_and_a_seed_repeats_it() {
        let p = RetryPolicy::new()
            .initial_interval(Duration::from_millis(100))
            .max_interval(Duration::from_secs(10));
        // On by default: within [backoff, 1.5 x backoff), and not always the same.
        let waits: Vec<Duration> = (0..64).map(|_| p.wait_after(2)).collect();
        for w in &waits {
            assert!(
                *w >= Duration::from_millis(200) && *w < Duration::from_millis(300),
                "{w:?}"
            );
        }
        assert!(waits.iter().any(|w| *w != waits[0]), "jitter varies");

        let seeded = p.clone().jitter_seed(7);
        let again = p.clone().jitter_seed(7);
        let other = p.clone().jitter_seed(8);
        let run = |q: &RetryPolicy| (1..6).map(|a| q.wait_after(a)).collect::<Vec<_>>();
        assert_eq!(run(&seeded), run(&again));
        assert_ne!(run(&seeded), run(&other));
        for (a, w) in (1..6).zip(run(&seeded)) {
            let backoff = p.delay_after(a);
            assert!(w >= backoff && w < backoff.mul_f64(1.5), "{a}: {w:?}");
        }

        let off = p.jitter(false);
        assert_eq!(off.wait_after(3), Duration::from_millis(400));
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
