//! Differences between two JSON values, one per JSON path (`$.report.title`,
//! `$.drafts[2]`): objects are compared key by key, down to the first place the two
//! differ in kind or in a scalar. Array items are matched by a longest common
//! subsequence, so an item inserted in the middle is one `added` row rather than a
//! change of every item after it: an added item's index is its index in B, a removed
//! one's its index in A, and an item replaced in place is compared further at its
//! index in B. (Arrays longer than [`MATCH_LIMIT`] items together are compared index
//! by index.)

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::Value;

/// What happened at a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    /// Only the second value has something there.
    Added,
    /// Only the first value has something there.
    Removed,
    /// Both have something there, and it differs.
    Changed,
}

impl ChangeKind {
    /// The lowercase name shown in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            ChangeKind::Added => "added",
            ChangeKind::Removed => "removed",
            ChangeKind::Changed => "changed",
        }
    }
}

/// One path at which two values differ.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PathChange {
    /// The JSON path, starting at `$` (the channel is its first key).
    pub path: String,
    /// Added, removed or changed.
    pub kind: ChangeKind,
    /// The value in the first checkpoint; absent when it has none there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub a: Option<Value>,
    /// The value in the second checkpoint; absent when it has none there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub b: Option<Value>,
}

/// Arrays whose lengths multiply to more than this are compared index by index.
pub const MATCH_LIMIT: usize = 250_000;

/// Appends `key` to `path`: `.key` for a name of letters, digits and `_` not starting
/// with a digit, else `["key"]` with the key as a JSON string.
pub fn push_key(path: &str, key: &str) -> String {
    let plain = key
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain {
        format!("{path}.{key}")
    } else {
        format!("{path}[{}]", Value::String(key.to_string()))
    }
}

/// Every path at which `a` and `b` (the values at `path`) differ, in order.
pub fn diff(path: &str, a: Option<&Value>, b: Option<&Value>, out: &mut Vec<PathChange>) {
    match (a, b) {
        (None, None) => {}
        (Some(Value::Object(x)), Some(Value::Object(y))) => {
            for (key, va) in x {
                diff(&push_key(path, key), Some(va), y.get(key), out);
            }
            for (key, vb) in y.iter().filter(|(k, _)| !x.contains_key(*k)) {
                diff(&push_key(path, key), None, Some(vb), out);
            }
        }
        (Some(Value::Array(x)), Some(Value::Array(y))) => diff_arrays(path, x, y, out),
        (a, b) if a == b => {}
        (a, b) => out.push(PathChange {
            path: path.to_string(),
            kind: match (a, b) {
                (None, _) => ChangeKind::Added,
                (_, None) => ChangeKind::Removed,
                _ => ChangeKind::Changed,
            },
            a: a.cloned(),
            b: b.cloned(),
        }),
    }
}

/// Every path at which two checkpoints' channel values differ: channel by channel
/// (in name order), each channel's paths starting at `$.channel`.
pub fn diff_channels(a: &BTreeMap<String, Value>, b: &BTreeMap<String, Value>) -> Vec<PathChange> {
    let channels: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    let mut out = Vec::new();
    for channel in channels {
        diff(
            &push_key("$", channel),
            a.get(channel),
            b.get(channel),
            &mut out,
        );
    }
    out
}

/// The pairs `(i, j)` of a longest common subsequence of `x` and `y`, in order.
fn common(x: &[Value], y: &[Value]) -> Vec<(usize, usize)> {
    let (n, m) = (x.len(), y.len());
    // lcs[i][j]: the length of an LCS of x[i..] and y[j..].
    let mut lcs = vec![vec![0usize; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if x[i] == y[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut pairs) = (0, 0, Vec::new());
    while i < n && j < m {
        if x[i] == y[j] {
            pairs.push((i, j));
            i += 1;
            j += 1;
        } else if lcs[i + 1][j] >= lcs[i][j + 1] {
            i += 1;
        } else {
            j += 1;
        }
    }
    pairs
}

fn diff_arrays(path: &str, x: &[Value], y: &[Value], out: &mut Vec<PathChange>) {
    let at = |i: usize| format!("{path}[{i}]");
    if x.len().saturating_mul(y.len()) > MATCH_LIMIT {
        for i in 0..x.len().max(y.len()) {
            diff(&at(i), x.get(i), y.get(i), out);
        }
        return;
    }
    let mut pairs = common(x, y);
    pairs.push((x.len(), y.len()));
    let (mut i, mut j) = (0, 0);
    for (next_i, next_j) in pairs {
        // The gap before the next matched pair: items replaced in place, then the
        // rest of the longer side removed or added.
        let (removed, added) = (next_i - i, next_j - j);
        let replaced = removed.min(added);
        for k in 0..replaced {
            diff(&at(j + k), Some(&x[i + k]), Some(&y[j + k]), out);
        }
        for k in replaced..removed {
            diff(&at(i + k), Some(&x[i + k]), None, out);
        }
        for k in replaced..added {
            diff(&at(j + k), None, Some(&y[j + k]), out);
        }
        (i, j) = (next_i + 1, next_j + 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rows(a: Value, b: Value) -> Vec<(String, &'static str)> {
        let mut out = Vec::new();
        diff("$", Some(&a), Some(&b), &mut out);
        out.into_iter().map(|c| (c.path, c.kind.name())).collect()
    }

    #[test]
    fn objects_and_arrays_are_compared_down_to_each_path() {
        let a = json!({
            "report": { "title": "draft", "tags": ["a", "b"] },
            "drafts": [1, 2],
            "gone": true,
            "same": { "x": 1 }
        });
        let b = json!({
            "report": { "title": "final", "tags": ["a"] },
            "drafts": [1, 2, 3],
            "same": { "x": 1 },
            "odd key": null
        });
        assert_eq!(
            rows(a, b),
            [
                ("$.drafts[2]".to_string(), "added"),
                ("$.gone".to_string(), "removed"),
                ("$.report.tags[1]".to_string(), "removed"),
                ("$.report.title".to_string(), "changed"),
                ("$[\"odd key\"]".to_string(), "added"),
            ]
        );
    }

    #[test]
    fn an_item_inserted_into_an_array_is_one_added_row() {
        let a = json!({ "s": ["a", "c", "d", "x", "w"] });
        let b = json!({ "s": ["a", "b", "c", "d", "y", "w", "z"] });
        let mut out = Vec::new();
        diff("$", Some(&a), Some(&b), &mut out);
        let got: Vec<(&str, &str, Option<Value>, Option<Value>)> = out
            .iter()
            .map(|c| (c.path.as_str(), c.kind.name(), c.a.clone(), c.b.clone()))
            .collect();
        assert_eq!(
            got,
            [
                ("$.s[1]", "added", None, Some(json!("b"))),
                ("$.s[4]", "changed", Some(json!("x")), Some(json!("y"))),
                ("$.s[6]", "added", None, Some(json!("z"))),
            ]
        );
        let mut gone = Vec::new();
        diff(
            "$",
            Some(&json!([1, 2, 3])),
            Some(&json!([1, 3])),
            &mut gone,
        );
        assert_eq!(gone.len(), 1);
        assert_eq!(
            (gone[0].path.as_str(), gone[0].kind),
            ("$[1]", ChangeKind::Removed)
        );
    }

    #[test]
    fn channels_are_compared_by_name_each_under_its_own_key() {
        let a = BTreeMap::from([
            ("notes".to_string(), json!(["x"])),
            ("gone".to_string(), json!(1)),
        ]);
        let b = BTreeMap::from([
            ("notes".to_string(), json!(["x", "y"])),
            ("odd name".to_string(), json!(true)),
        ]);
        let got: Vec<(String, ChangeKind)> = diff_channels(&a, &b)
            .into_iter()
            .map(|c| (c.path, c.kind))
            .collect();
        assert_eq!(
            got,
            [
                ("$.gone".to_string(), ChangeKind::Removed),
                ("$.notes[1]".to_string(), ChangeKind::Added),
                ("$[\"odd name\"]".to_string(), ChangeKind::Added),
            ]
        );
    }

    #[test]
    fn a_change_of_kind_is_one_change_at_that_path() {
        let mut out = Vec::new();
        diff("$.x", Some(&json!([1])), Some(&json!({ "a": 1 })), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].kind, ChangeKind::Changed);
        assert_eq!(out[0].a, Some(json!([1])));
        assert_eq!(out[0].b, Some(json!({ "a": 1 })));
        let mut none = Vec::new();
        diff(
            "$",
            Some(&json!({ "a": [1] })),
            Some(&json!({ "a": [1] })),
            &mut none,
        );
        assert!(none.is_empty());
    }
}
