//! Mutations of stored rows, for the fuzz tests that damage a saver's tables (SQLite,
//! PostgreSQL) and read them back through the savers, the runtime and the CLI.
//!
//! A mutation is chosen by a seed, so a failing case can be replayed.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

/// A column of a saver table that the fuzz tests damage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Column {
    /// The table.
    pub table: &'static str,
    /// The column.
    pub column: &'static str,
    /// Whether it holds integers (else text).
    pub integer: bool,
}

const fn text(table: &'static str, column: &'static str) -> Column {
    Column {
        table,
        column,
        integer: false,
    }
}

const fn integer(table: &'static str, column: &'static str) -> Column {
    Column {
        table,
        column,
        integer: true,
    }
}

/// Every column a checkpoint is read back from.
pub const COLUMNS: &[Column] = &[
    text("stategraph_checkpoints", "checkpoint"),
    text("stategraph_checkpoints", "metadata"),
    text("stategraph_checkpoints", "value_channels"),
    text("stategraph_checkpoints", "parent_id"),
    text("stategraph_checkpoints", "checkpoint_id"),
    integer("stategraph_checkpoints", "seq"),
    text("stategraph_values", "value"),
    text("stategraph_values", "channel"),
    integer("stategraph_values", "version"),
    text("stategraph_writes", "value"),
    text("stategraph_writes", "channel"),
    text("stategraph_writes", "task_id"),
    integer("stategraph_writes", "idx"),
];

/// A damaged value for a column.
#[derive(Clone, Debug, PartialEq)]
pub enum Damage {
    /// New text.
    Text(String),
    /// A new integer.
    Integer(i64),
}

/// A seeded choice of column, row (an index to take modulo the row count) and damage.
#[derive(Clone, Debug)]
pub struct Case {
    /// The column to damage.
    pub column: Column,
    /// Which row (modulo the number of rows).
    pub row: usize,
    /// The seed the damage is drawn with.
    pub seed: u64,
}

impl Case {
    /// The case of `seed`.
    pub fn new(seed: u64) -> Self {
        let mut rng = StdRng::seed_from_u64(seed);
        Self {
            column: COLUMNS[rng.random_range(0..COLUMNS.len())],
            row: rng.random_range(0..1024),
            seed,
        }
    }

    /// The damaged value for a row whose value was `original` (text, when it was).
    pub fn damage(&self, original: Option<&str>) -> Damage {
        let mut rng = StdRng::seed_from_u64(self.seed ^ 0x5eed);
        if self.column.integer {
            const EXTREMES: [i64; 8] = [0, -1, 1, 2, i64::MAX, i64::MIN, 1 << 32, -(1 << 40)];
            return Damage::Integer(EXTREMES[rng.random_range(0..EXTREMES.len())]);
        }
        Damage::Text(mutate(original.unwrap_or(""), &mut rng))
    }
}

/// Values likely to confuse a decoder, as JSON.
fn interesting(rng: &mut StdRng) -> Value {
    let all = [
        Value::Null,
        json!(true),
        json!(0),
        json!(-1),
        json!(u64::MAX),
        json!(i64::MIN),
        json!(u32::MAX),
        json!(1e308),
        json!(0.5),
        json!(""),
        json!("ghost"),
        json!([]),
        json!({}),
        json!([1, 2, 3]),
        json!({"kind": "append", "value": {"not": "a list"}}),
        json!({"kind": "append", "value": ["x"]}),
        json!({"kind": "full", "value": null}),
        json!({"node": "ghost"}),
        json!(["ghost"]),
    ];
    all[rng.random_range(0..all.len())].clone()
}

/// The number of JSON nodes in `v` (itself included), in pre-order.
pub fn count_nodes(v: &Value) -> usize {
    1 + match v {
        Value::Array(a) => a.iter().map(count_nodes).sum(),
        Value::Object(o) => o.values().map(count_nodes).sum(),
        _ => 0,
    }
}

/// Replaces the node at pre-order position `*n`; returns whether it did.
pub fn replace_nth(v: &mut Value, n: &mut usize, with: &Value) -> bool {
    if *n == 0 {
        *v = with.clone();
        return true;
    }
    *n -= 1;
    match v {
        Value::Array(a) => a.iter_mut().any(|c| replace_nth(c, n, with)),
        Value::Object(o) => o.values_mut().any(|c| replace_nth(c, n, with)),
        _ => false,
    }
}

/// `text` damaged one of several ways: bytes overwritten, truncated, garbage
/// inserted, a range removed, or (for JSON) one node replaced by an interesting value.
pub fn mutate(text: &str, rng: &mut StdRng) -> String {
    let mut bytes = text.as_bytes().to_vec();
    let len = bytes.len().max(1);
    match rng.random_range(0..5) {
        0 => {
            for _ in 0..rng.random_range(1..6) {
                let at = rng.random_range(0..len);
                if at < bytes.len() {
                    bytes[at] = rng.random_range(0x20..0x7f);
                }
            }
        }
        1 => bytes.truncate(rng.random_range(0..len)),
        2 => {
            let garbage: &[&[u8]] = &[
                b"9",
                b"-",
                b"\"",
                b"99999999999999999999",
                b"null,",
                b"{}",
                b"[",
                b"\\u0000",
            ];
            let at = rng.random_range(0..=bytes.len());
            let pick = garbage[rng.random_range(0..garbage.len())];
            bytes.splice(at..at, pick.iter().copied());
        }
        3 => {
            let at = rng.random_range(0..len).min(bytes.len());
            let end = (at + rng.random_range(1..24)).min(bytes.len());
            bytes.drain(at..end);
        }
        _ => {
            if let Ok(mut v) = serde_json::from_str::<Value>(text) {
                let mut n = rng.random_range(0..count_nodes(&v));
                let with = interesting(rng);
                replace_nth(&mut v, &mut n, &with);
                return v.to_string();
            }
            bytes.truncate(len / 2);
        }
    }
    // Stored columns are text: invalid UTF-8 (a cut character) becomes U+FFFD.
    String::from_utf8_lossy(&bytes).into_owned()
}
