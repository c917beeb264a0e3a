//! Time-to-live: [`TtlConfig`] and the expiry rules every backend applies the same
//! way (an item whose `expires_at` has passed is never returned).

use std::time::{Duration, SystemTime};

/// How a store expires items.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TtlConfig {
    /// The time-to-live of a put that names none; `None`: such items never expire.
    pub default_ttl: Option<Duration>,
    /// Whether reads (gets and search hits) move an item's expiry to now + its
    /// time-to-live, unless the read says otherwise. Default `true`.
    pub refresh_on_read: bool,
    /// How often a background task removes expired items; `None`: only
    /// [`Store::sweep`](super::Store::sweep) calls remove them (they are hidden from
    /// reads either way).
    pub sweep_interval: Option<Duration>,
}

impl Default for TtlConfig {
    fn default() -> Self {
        Self {
            default_ttl: None,
            refresh_on_read: true,
            sweep_interval: None,
        }
    }
}

impl TtlConfig {
    /// No default time-to-live, refresh on read, no sweeper.
    pub fn new() -> Self {
        Self::default()
    }

    /// Puts without a time-to-live get `ttl`.
    #[must_use]
    pub fn default_ttl(mut self, ttl: Duration) -> Self {
        self.default_ttl = Some(ttl);
        self
    }

    /// Whether reads refresh expiry by default.
    #[must_use]
    pub fn refresh_on_read(mut self, refresh: bool) -> Self {
        self.refresh_on_read = refresh;
        self
    }

    /// Sweeps expired items every `interval` in a background tokio task.
    #[must_use]
    pub fn sweep_interval(mut self, interval: Duration) -> Self {
        self.sweep_interval = Some(interval);
        self
    }

    /// The time-to-live of a put that asked for `requested`.
    pub fn ttl_for(&self, requested: Option<Duration>) -> Option<Duration> {
        requested.or(self.default_ttl)
    }

    /// Whether a read that asked for `requested` refreshes expiry.
    pub fn refreshes(&self, requested: Option<bool>) -> bool {
        requested.unwrap_or(self.refresh_on_read)
    }
}

/// When an item with `ttl` written or refreshed at `now` expires (`None`: never, also
/// for a time-to-live too long to represent).
pub fn expiry(now: SystemTime, ttl: Option<Duration>) -> Option<SystemTime> {
    now.checked_add(ttl?)
}

/// Whether an item expiring at `expires_at` has expired at `now`.
pub fn is_expired(expires_at: Option<SystemTime>, now: SystemTime) -> bool {
    expires_at.is_some_and(|at| at <= now)
}
