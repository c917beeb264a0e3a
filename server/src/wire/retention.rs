//! A thread's time to live as clients send it (`ttl` on create and update) and
//! read it (`?include=ttl`), and `POST /threads/prune`.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::db::Ttl;

/// `ttl` of a thread: how long after its last change it is swept, and how.
#[derive(Clone, Copy, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TtlRequest {
    /// Minutes after the thread's last change (more than 0).
    pub(crate) ttl: f64,
    /// `delete` (the default) or `keep_latest`.
    #[serde(default)]
    pub(crate) strategy: Option<PruneStrategy>,
}

impl TtlRequest {
    /// The stored time to live; a 422 naming `$.ttl.ttl` for a non-positive one.
    pub(crate) fn stored(self) -> Result<Ttl, crate::error::ApiError> {
        let ms = self.ttl * 60_000.0;
        if !(1.0..9.0e15).contains(&ms) {
            return Err(crate::error::ApiError::invalid(
                "$.ttl.ttl",
                format!(
                    "{} is not a time to live: give minutes, more than 0",
                    self.ttl
                ),
            ));
        }
        // In range: checked above.
        #[allow(clippy::cast_possible_truncation)]
        let after_ms = ms as i64;
        Ok(Ttl {
            after_ms,
            keep_latest: self.strategy == Some(PruneStrategy::KeepLatest),
        })
    }
}

/// What pruning (or a time to live) does to a thread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum PruneStrategy {
    /// The thread goes, with its runs, checkpoints and crons.
    #[default]
    Delete,
    /// The thread stays with its latest checkpoint.
    KeepLatest,
}

/// A thread's time to live, as `?include=ttl` shows it.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub(crate) struct ThreadTtlInfo {
    /// `delete` or `keep_latest`.
    pub(crate) strategy: String,
    /// Minutes after its last change.
    pub(crate) ttl: f64,
    /// When it is swept unless it changes.
    #[schema(format = DateTime)]
    pub(crate) expires_at: String,
}

impl ThreadTtlInfo {
    /// The time to live of a thread last changed at `updated_at`.
    pub(crate) fn of(ttl: Ttl, updated_at: i64) -> Self {
        #[allow(clippy::cast_precision_loss)]
        let minutes = ttl.after_ms as f64 / 60_000.0;
        Self {
            strategy: ttl.strategy().to_string(),
            ttl: minutes,
            expires_at: super::clock::time(updated_at.saturating_add(ttl.after_ms)),
        }
    }
}

/// `POST /threads/prune`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ThreadPrune {
    /// The threads to prune.
    #[serde(default)]
    pub(crate) thread_ids: Vec<String>,
    #[serde(default)]
    pub(crate) strategy: PruneStrategy,
}

/// What `POST /threads/prune` did.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Pruned {
    /// How many of the threads were pruned (unknown and busy ones are not).
    pub(crate) pruned_count: usize,
}
