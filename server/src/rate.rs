//! Counting requests in one-minute windows, per key: run creations per thread, and
//! requests per client.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

const WINDOW: Duration = Duration::from_secs(60);

/// Counts per key in the current minute of each key.
#[derive(Debug, Default)]
pub(crate) struct Windows {
    counts: Mutex<HashMap<String, (Instant, u32)>>,
}

impl Windows {
    /// Counts one for `key`; `Err(wait)` (counting nothing) when `key` had `limit`
    /// already in its current minute, which ends after `wait`.
    pub(crate) fn admit(&self, key: &str, limit: u32) -> Result<(), Duration> {
        // Nothing panics while holding it, so a poisoned map is still consistent.
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        if counts.len() > 10_000 {
            counts.retain(|_, (start, _)| now.duration_since(*start) < WINDOW);
        }
        let entry = counts.entry(key.to_string()).or_insert((now, 0));
        if now.duration_since(entry.0) >= WINDOW {
            *entry = (now, 0);
        }
        if entry.1 >= limit {
            return Err(WINDOW.saturating_sub(now.duration_since(entry.0)));
        }
        entry.1 += 1;
        Ok(())
    }
}
