//! [`Filter`]: the small JSON language a search narrows its items with.

use std::cmp::Ordering;

use serde_json::Value;

use super::error::StoreError;

/// The operators the language accepts, as listed in error messages.
const OPERATORS: &str = "$eq, $ne, $gt, $gte, $lt, $lte, $in, $nin, $exists";

/// A parsed filter: conditions that must all hold.
///
/// A filter is a JSON object. Each key is a field path (dots go into nested objects:
/// `"a.b"` is `value["a"]["b"]`); each value is either a plain JSON value (the field
/// must equal it) or an object of operators. All conditions must hold.
///
/// | operator | holds when the field |
/// |----------|----------------------|
/// | `$eq` (or a plain value) | equals the operand |
/// | `$ne` | does not equal the operand (or is absent) |
/// | `$gt` `$gte` `$lt` `$lte` | compares so with the operand: numbers numerically, strings lexicographically; other kinds never compare |
/// | `$in` | equals one of the operand's elements (an array) |
/// | `$nin` | equals none of them (or is absent) |
/// | `$exists` | is present (`true`) or absent (`false`) |
///
/// Numbers are equal when numerically equal (`1` equals `1.0`). An object whose keys
/// all start with `$` is an operator object; mixing `$` keys with plain keys, an
/// unknown operator, or a `$in`/`$nin` without an array is a
/// [`StoreError::BadFilter`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Filter {
    conditions: Vec<Condition>,
}

/// One condition of a [`Filter`]: a field path and what must hold of it.
#[derive(Clone, Debug, PartialEq)]
pub struct Condition {
    /// The field path (`"a.b"`), as written.
    pub path: String,
    /// What must hold of the field.
    pub op: FilterOp,
}

/// What a [`Condition`] requires of its field.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum FilterOp {
    /// `$eq` or a plain value.
    Eq(Value),
    /// `$ne`.
    Ne(Value),
    /// `$gt`.
    Gt(Value),
    /// `$gte`.
    Gte(Value),
    /// `$lt`.
    Lt(Value),
    /// `$lte`.
    Lte(Value),
    /// `$in`.
    In(Vec<Value>),
    /// `$nin`.
    Nin(Vec<Value>),
    /// `$exists`.
    Exists(bool),
}

impl Filter {
    /// Parses a filter written in the filter language (see [`Filter`]).
    ///
    /// ```
    /// use serde_json::json;
    /// use stategraph::store::Filter;
    ///
    /// let f = Filter::parse(&json!({"kind": "note", "stars": {"$gte": 3}}))?;
    /// assert!(f.matches(&json!({"kind": "note", "stars": 4})));
    /// assert!(!f.matches(&json!({"kind": "note", "stars": 2})));
    /// assert!(Filter::parse(&json!({"stars": {"$between": [1, 2]}})).is_err());
    /// # Ok::<(), stategraph::store::StoreError>(())
    /// ```
    ///
    /// # Errors
    /// [`StoreError::BadFilter`]: not an object, an unknown operator, an operator
    /// object mixed with plain keys, `$in`/`$nin` without an array, `$exists` without
    /// a boolean.
    pub fn parse(filter: &Value) -> Result<Self, StoreError> {
        let Value::Object(fields) = filter else {
            return Err(bad(format!(
                "a filter must be a JSON object of field paths, got a JSON {}",
                kind_of(filter)
            )));
        };
        let mut conditions = Vec::new();
        for (path, wanted) in fields {
            if path.is_empty() || path.split('.').any(str::is_empty) {
                return Err(bad(format!(
                    "field path {path:?} has an empty segment; write paths like \"a.b\""
                )));
            }
            if path.starts_with('$') {
                return Err(bad(format!(
                    "operator `{path}` must be inside a field, e.g. {{\"field\": {{\"{path}\": ..}}}}"
                )));
            }
            match operator_object(path, wanted)? {
                Some(ops) => {
                    for (op, operand) in ops {
                        conditions.push(Condition {
                            path: path.clone(),
                            op: parse_op(path, op, operand)?,
                        });
                    }
                }
                None => conditions.push(Condition {
                    path: path.clone(),
                    op: FilterOp::Eq(wanted.clone()),
                }),
            }
        }
        Ok(Self { conditions })
    }

    /// The conditions, in the order written (operators of one field in key order).
    pub fn conditions(&self) -> &[Condition] {
        &self.conditions
    }

    /// Whether `value` satisfies every condition.
    pub fn matches(&self, value: &Value) -> bool {
        self.conditions.iter().all(|c| c.matches(value))
    }
}

impl TryFrom<Value> for Filter {
    type Error = StoreError;

    fn try_from(value: Value) -> Result<Self, StoreError> {
        Self::parse(&value)
    }
}

impl TryFrom<&Value> for Filter {
    type Error = StoreError;

    fn try_from(value: &Value) -> Result<Self, StoreError> {
        Self::parse(value)
    }
}

impl Condition {
    /// Whether `value`'s field at this condition's path satisfies it.
    pub fn matches(&self, value: &Value) -> bool {
        let field = field_at(value, &self.path);
        match (&self.op, field) {
            (FilterOp::Exists(wanted), field) => field.is_some() == *wanted,
            (FilterOp::Ne(operand), Some(field)) => !json_eq(field, operand),
            (FilterOp::Nin(operands), Some(field)) => !operands.iter().any(|o| json_eq(field, o)),
            (FilterOp::Ne(_) | FilterOp::Nin(_), None) => true,
            (_, None) => false,
            (FilterOp::Eq(operand), Some(field)) => json_eq(field, operand),
            (FilterOp::In(operands), Some(field)) => operands.iter().any(|o| json_eq(field, o)),
            (FilterOp::Gt(operand), Some(field)) => {
                compare(field, operand) == Some(Ordering::Greater)
            }
            (FilterOp::Gte(operand), Some(field)) => matches!(
                compare(field, operand),
                Some(Ordering::Greater | Ordering::Equal)
            ),
            (FilterOp::Lt(operand), Some(field)) => compare(field, operand) == Some(Ordering::Less),
            (FilterOp::Lte(operand), Some(field)) => matches!(
                compare(field, operand),
                Some(Ordering::Less | Ordering::Equal)
            ),
        }
    }
}

/// The field of `value` at a dotted `path`, if every step is an object holding it.
pub fn field_at<'v>(value: &'v Value, path: &str) -> Option<&'v Value> {
    path.split('.')
        .try_fold(value, |node, segment| node.as_object()?.get(segment))
}

/// JSON equality, with numbers compared numerically (`1` equals `1.0`).
pub fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(_), Value::Number(_)) => compare(a, b) == Some(Ordering::Equal),
        _ => a == b,
    }
}

/// How two JSON values order: numbers numerically, strings lexicographically; `None`
/// for any other pair of kinds (they never compare).
pub fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if let (Some(x), Some(y)) = (x.as_i64(), y.as_i64()) {
                Some(x.cmp(&y))
            } else if let (Some(x), Some(y)) = (x.as_u64(), y.as_u64()) {
                Some(x.cmp(&y))
            } else {
                x.as_f64()?.partial_cmp(&y.as_f64()?)
            }
        }
        (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
        _ => None,
    }
}

/// The operators of `wanted` when it is an operator object, `None` when it is a plain
/// value to compare with.
fn operator_object<'v>(
    path: &str,
    wanted: &'v Value,
) -> Result<Option<&'v serde_json::Map<String, Value>>, StoreError> {
    let Value::Object(map) = wanted else {
        return Ok(None);
    };
    let dollars = map.keys().filter(|k| k.starts_with('$')).count();
    if dollars == 0 {
        return Ok(None);
    }
    if dollars != map.len() {
        return Err(bad(format!(
            "field {path:?} mixes operators with plain keys; use either an operator object ({OPERATORS}) or a plain value"
        )));
    }
    Ok(Some(map))
}

fn parse_op(path: &str, op: &str, operand: &Value) -> Result<FilterOp, StoreError> {
    let list = |name: &str| match operand {
        Value::Array(items) => Ok(items.clone()),
        other => Err(bad(format!(
            "`{name}` on field {path:?} needs an array, got a JSON {}",
            kind_of(other)
        ))),
    };
    Ok(match op {
        "$eq" => FilterOp::Eq(operand.clone()),
        "$ne" => FilterOp::Ne(operand.clone()),
        "$gt" => FilterOp::Gt(operand.clone()),
        "$gte" => FilterOp::Gte(operand.clone()),
        "$lt" => FilterOp::Lt(operand.clone()),
        "$lte" => FilterOp::Lte(operand.clone()),
        "$in" => FilterOp::In(list("$in")?),
        "$nin" => FilterOp::Nin(list("$nin")?),
        "$exists" => match operand {
            Value::Bool(b) => FilterOp::Exists(*b),
            other => {
                return Err(bad(format!(
                    "`$exists` on field {path:?} needs true or false, got a JSON {}",
                    kind_of(other)
                )));
            }
        },
        unknown => {
            return Err(bad(format!(
                "unknown operator `{unknown}` on field {path:?}; accepted operators: {OPERATORS}"
            )));
        }
    })
}

/// The name of a JSON value's kind, for messages.
pub(crate) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn bad(reason: String) -> StoreError {
    StoreError::BadFilter { reason }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn holds(filter: Value, value: Value) -> bool {
        Filter::parse(&filter)
            .map(|f| f.matches(&value))
            .unwrap_or(false)
    }

    #[test]
    fn every_operator_decides_as_documented() {
        let v = json!({"n": 5, "s": "m", "a": {"b": true}, "nil": null});
        assert!(holds(json!({"n": 5.0}), v.clone()));
        assert!(holds(json!({"a.b": true}), v.clone()));
        assert!(!holds(json!({"a.c": true}), v.clone()));
        assert!(holds(
            json!({"n": {"$ne": 4}, "missing": {"$ne": 1}}),
            v.clone()
        ));
        assert!(holds(json!({"n": {"$gt": 4, "$lt": 6}}), v.clone()));
        assert!(holds(json!({"n": {"$gte": 5, "$lte": 5}}), v.clone()));
        assert!(!holds(json!({"n": {"$gt": 5}}), v.clone()));
        assert!(holds(json!({"s": {"$gt": "a", "$lt": "z"}}), v.clone()));
        assert!(!holds(json!({"s": {"$gt": 1}}), v.clone()));
        assert!(holds(json!({"n": {"$in": [1, 5]}}), v.clone()));
        assert!(holds(
            json!({"n": {"$nin": [1, 2]}, "gone": {"$nin": [1]}}),
            v.clone()
        ));
        assert!(holds(
            json!({"nil": {"$exists": true}, "gone": {"$exists": false}}),
            v.clone()
        ));
        assert!(!holds(json!({"gone": {"$gt": 0}}), v));
    }

    #[test]
    fn malformed_filters_name_the_problem() {
        let err = |f: Value| {
            Filter::parse(&f)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        assert!(err(json!({"n": {"$near": 1}})).contains("unknown operator `$near`"));
        assert!(err(json!({"n": {"$near": 1}})).contains("$exists"));
        assert!(err(json!([1])).contains("must be a JSON object"));
        assert!(err(json!({"n": {"$in": 3}})).contains("`$in` on field \"n\" needs an array"));
        assert!(err(json!({"n": {"$gt": 1, "x": 2}})).contains("mixes operators"));
        assert!(err(json!({"$eq": 1})).contains("inside a field"));
        assert!(err(json!({"a..b": 1})).contains("empty segment"));
    }
}
