//! Helpers for saver implementations: records as JSON text with a size limit, decoded
//! with errors that say what was being read and where.
//!
//! ```
//! use stategraph::checkpoint::record::{Place, decode_record, encode_record};
//! use stategraph::checkpoint::{CheckpointConfig, CheckpointError};
//!
//! let config = CheckpointConfig::thread("t");
//! let what = || format!("metadata of {}", Place::of(&config));
//! let json = encode_record(&vec![1, 2, 3], 1024, what)?;
//! let back: Vec<u32> = decode_record(json.as_bytes(), 1024, what)?;
//! assert_eq!(back, [1, 2, 3]);
//!
//! let err = decode_record::<Vec<u32>>(b"[1, 2", 1024, what).unwrap_err();
//! assert!(matches!(err, CheckpointError::Corrupt { .. }));
//! assert_eq!(
//!     err.to_string().split(':').next(),
//!     Some("metadata of thread `t` is corrupt")
//! );
//! # Ok::<(), CheckpointError>(())
//! ```

use std::fmt;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::error::CheckpointError;
use super::types::{CHECKPOINT_FORMAT, Checkpoint, CheckpointConfig};

/// Where a record lives (thread and namespace), for error messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place<'a> {
    /// The thread.
    pub thread: &'a str,
    /// The checkpoint namespace (empty for the root graph).
    pub ns: &'a str,
}

impl<'a> Place<'a> {
    /// The thread and namespace `config` names.
    pub fn of(config: &'a CheckpointConfig) -> Self {
        Self {
            thread: &config.thread_id,
            ns: &config.checkpoint_ns,
        }
    }
}

impl fmt::Display for Place<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "thread `{}`", self.thread)?;
        if !self.ns.is_empty() {
            write!(f, " namespace `{}`", self.ns)?;
        }
        Ok(())
    }
}

/// `checkpoint <id> of <place>`: how errors name a checkpoint.
pub fn checkpoint_what(id: &str, place: Place<'_>) -> String {
    format!("checkpoint {id} of {place}")
}

/// `value of channel <channel> version <version> in <place>`: how errors name a stored
/// channel value.
pub fn value_what(channel: &str, version: u64, place: Place<'_>) -> String {
    format!("value of channel `{channel}` version {version} in {place}")
}

/// `pending write <idx> of task <task> on checkpoint <id> of <place>`: how errors
/// name a stored pending write.
pub fn write_what(idx: impl fmt::Display, task_id: &str, id: &str, place: Place<'_>) -> String {
    format!("pending write {idx} of task {task_id} on checkpoint {id} of {place}")
}

/// A stored write index, checked: indices are `u32`, so a stored one outside that
/// range is a corrupt row, named by [`write_what`].
///
/// # Errors
/// [`CheckpointError::Invalid`] naming the row.
pub fn write_index(
    stored: i64,
    task_id: &str,
    id: &str,
    place: Place<'_>,
) -> Result<u32, CheckpointError> {
    u32::try_from(stored).map_err(|_| CheckpointError::Invalid {
        what: write_what(stored, task_id, id, place),
        reason: format!("its index {stored} is out of range (0 to {})", u32::MAX),
    })
}

/// Encodes a record as JSON text, refusing one longer than `limit` bytes (which the
/// saver could not read back) as [`CheckpointError::Oversize`].
///
/// # Errors
/// `Oversize`, or `Corrupt` when the value does not serialize.
pub fn encode_record<T: Serialize>(
    value: &T,
    limit: usize,
    what: impl Fn() -> String,
) -> Result<String, CheckpointError> {
    let json = serde_json::to_string(value).map_err(|source| CheckpointError::Corrupt {
        what: what(),
        source,
    })?;
    if json.len() > limit {
        return Err(CheckpointError::Oversize {
            what: what(),
            size: json.len(),
            limit,
        });
    }
    Ok(json)
}

/// Decodes a record from JSON text, refusing one longer than `limit` bytes before
/// parsing it.
///
/// # Errors
/// `Oversize`, or `Corrupt` naming `what` when the text is not the expected JSON.
pub fn decode_record<T: DeserializeOwned>(
    bytes: &[u8],
    limit: usize,
    what: impl Fn() -> String,
) -> Result<T, CheckpointError> {
    if bytes.len() > limit {
        return Err(CheckpointError::Oversize {
            what: what(),
            size: bytes.len(),
            limit,
        });
    }
    serde_json::from_slice(bytes).map_err(|source| CheckpointError::Corrupt {
        what: what(),
        source,
    })
}

/// Decodes a checkpoint record; one that fails because it was written in a newer
/// format ([`CHECKPOINT_FORMAT`]) is [`CheckpointError::UnsupportedFormat`], not
/// `Corrupt`.
///
/// # Errors
/// As [`decode_record`], or `UnsupportedFormat`.
pub fn decode_checkpoint_record(
    bytes: &[u8],
    limit: usize,
    what: &str,
) -> Result<Checkpoint, CheckpointError> {
    decode_record::<Checkpoint>(bytes, limit, || what.to_string()).map_err(|error| {
        if !matches!(error, CheckpointError::Corrupt { .. }) {
            return error;
        }
        let Ok(Value::Object(fields)) = serde_json::from_slice::<Value>(bytes) else {
            return error;
        };
        let found = fields
            .get("v")
            .and_then(Value::as_u64)
            .and_then(|v| u32::try_from(v).ok());
        match (found, fields.get("id").and_then(Value::as_str)) {
            (Some(found), Some(id)) if found > CHECKPOINT_FORMAT => {
                CheckpointError::UnsupportedFormat {
                    id: id.to_string(),
                    found,
                    supported: CHECKPOINT_FORMAT,
                }
            }
            _ => error,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oversize_records_are_refused_both_ways() {
        let what = || "a record".to_string();
        let err = encode_record(&"x".repeat(10), 8, what).unwrap_err();
        assert!(matches!(
            err,
            CheckpointError::Oversize {
                size: 12,
                limit: 8,
                ..
            }
        ));
        let err = decode_record::<String>(b"\"0123456789\"", 8, what).unwrap_err();
        assert!(matches!(
            err,
            CheckpointError::Oversize {
                size: 12,
                limit: 8,
                ..
            }
        ));
    }

    #[test]
    fn a_checkpoint_of_a_newer_format_says_so() {
        let newer = format!(r#"{{"v": {}, "id": "abc"}}"#, CHECKPOINT_FORMAT + 1);
        let err = decode_checkpoint_record(newer.as_bytes(), 1024, "checkpoint abc").unwrap_err();
        assert!(matches!(
            err,
            CheckpointError::UnsupportedFormat { ref id, found, .. }
                if id == "abc" && found == CHECKPOINT_FORMAT + 1
        ));
        let broken = decode_checkpoint_record(b"{\"v\": 1}", 1024, "checkpoint abc").unwrap_err();
        assert!(matches!(broken, CheckpointError::Corrupt { .. }));
    }

    #[test]
    fn places_name_the_namespace_only_when_there_is_one() {
        let mut config = CheckpointConfig::thread("t");
        assert_eq!(Place::of(&config).to_string(), "thread `t`");
        config.checkpoint_ns = "sub".into();
        assert_eq!(
            checkpoint_what("c1", Place::of(&config)),
            "checkpoint c1 of thread `t` namespace `sub`"
        );
    }
}

/// The query SQL savers list threads with (the same text works on SQLite and
/// PostgreSQL): per thread, its checkpoint count and the last stored checkpoint of its
/// first namespace (the root's, when it has one), with columns `thread_id`, count,
/// `checkpoint_id`, `checkpoint`, `metadata`, `checkpoint_ns`; one row per thread. The
/// order of different namespaces' checkpoints is not recorded. Two checkpoints that
/// share a `seq` (only writers that did not hold the thread can make that) are told
/// apart by id, the greater first.
///
/// The latest checkpoint is picked by a window over one pass of the table, then read
/// by its key: no per-thread subquery. A plan a database cached while the table was
/// small (PostgreSQL keeps one per prepared statement until the next `ANALYZE`) can
/// then not turn into one scan of the table per thread once it has grown: with a
/// correlated `MAX(seq)` it did, and listing 10,000 threads took minutes.
pub const THREADS_SQL: &str = "SELECT c.thread_id, r.n, c.checkpoint_id, c.checkpoint, c.metadata,
            c.checkpoint_ns
     FROM (SELECT thread_id, checkpoint_ns, checkpoint_id,
                  COUNT(*) OVER (PARTITION BY thread_id) AS n,
                  ROW_NUMBER() OVER (PARTITION BY thread_id
                      ORDER BY checkpoint_ns, seq DESC, checkpoint_id DESC) AS pick
           FROM stategraph_checkpoints) AS r
     JOIN stategraph_checkpoints AS c
       ON c.thread_id = r.thread_id AND c.checkpoint_ns = r.checkpoint_ns
      AND c.checkpoint_id = r.checkpoint_id
     WHERE r.pick = 1
     ORDER BY c.thread_id";

/// The SQL savers' tables that hold a thread's checkpoints, writes and values.
pub const THREAD_TABLES: [&str; 3] = [
    "stategraph_checkpoints",
    "stategraph_writes",
    "stategraph_values",
];

/// The one field of a checkpoint record that thread listings read.
#[derive(serde::Deserialize)]
pub struct LatestTs {
    /// When the checkpoint was written.
    pub ts: String,
}

/// The one field of a metadata record that thread listings read.
#[derive(serde::Deserialize)]
pub struct LatestStep {
    /// The checkpoint's step.
    pub step: i64,
}
