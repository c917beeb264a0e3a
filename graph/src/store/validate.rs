//! The checks every backend runs on a batch before it writes anything, so a bad
//! namespace, key or value is refused the same way everywhere and nothing of the
//! batch is stored.

use serde_json::Value;

use super::error::StoreError;
use super::filter::kind_of;
use super::types::StoreOp;

/// The largest value a put accepts, measured as its JSON text: 1 MiB.
pub const MAX_VALUE_BYTES: usize = 1 << 20;

/// The first label LangGraph reserves for its own use; stores refuse it too.
pub const RESERVED_LABEL: &str = "langgraph";

/// Checks the namespace of a put: at least one label, every label non-empty and
/// without `.`, the first label not [`RESERVED_LABEL`].
///
/// # Errors
/// [`StoreError::InvalidNamespace`] saying which rule it breaks.
pub fn validate_namespace(namespace: &[String]) -> Result<(), StoreError> {
    if namespace.is_empty() {
        return Err(invalid_namespace(
            namespace,
            "a namespace needs at least one label, e.g. [\"users\", \"u-42\"]",
        ));
    }
    validate_labels(namespace, false)?;
    if namespace[0] == RESERVED_LABEL {
        return Err(invalid_namespace(
            namespace,
            "the first label `langgraph` is reserved; choose another",
        ));
    }
    Ok(())
}

/// Checks the labels of a read's namespace or prefix (which may be empty): every
/// label non-empty and without `.`; `"*"` too when `wildcards` (namespace listings).
fn validate_labels(namespace: &[String], wildcards: bool) -> Result<(), StoreError> {
    for label in namespace {
        if label.is_empty() {
            return Err(invalid_namespace(
                namespace,
                "labels must not be empty; remove the empty label",
            ));
        }
        if label.contains('.') {
            return Err(invalid_namespace(
                namespace,
                &format!(
                    "label {label:?} contains `.`; use another character or split it into two labels"
                ),
            ));
        }
        if label == "*" && !wildcards {
            return Err(invalid_namespace(
                namespace,
                "`*` is a wildcard of namespace listings only; use another label",
            ));
        }
    }
    Ok(())
}

/// Checks a key: non-empty.
///
/// # Errors
/// [`StoreError::InvalidKey`].
pub fn validate_key(namespace: &[String], key: &str) -> Result<(), StoreError> {
    if key.is_empty() {
        return Err(StoreError::InvalidKey {
            namespace: namespace.to_vec(),
            key: key.to_owned(),
            reason: "keys must not be empty".to_owned(),
        });
    }
    Ok(())
}

/// Checks a value: a JSON object whose JSON text is at most [`MAX_VALUE_BYTES`].
///
/// # Errors
/// [`StoreError::NotAnObject`] or [`StoreError::TooLarge`].
pub fn validate_value(namespace: &[String], key: &str, value: &Value) -> Result<(), StoreError> {
    if !value.is_object() {
        return Err(StoreError::NotAnObject {
            namespace: namespace.to_vec(),
            key: key.to_owned(),
            kind: kind_of(value),
        });
    }
    let bytes = json_len(value);
    if bytes > MAX_VALUE_BYTES {
        return Err(StoreError::TooLarge {
            namespace: namespace.to_vec(),
            key: key.to_owned(),
            bytes,
            limit: MAX_VALUE_BYTES,
        });
    }
    Ok(())
}

/// Checks every operation of a batch, before anything of it is written: puts as
/// [`validate_namespace`], [`validate_key`] and [`validate_value`] say; gets the same
/// for namespace and key; search prefixes and listing patterns for their labels
/// (`"*"` allowed in listings); a search `query` only when `has_index`.
///
/// # Errors
/// The first operation's error, in batch order; [`StoreError::NoIndex`] for a query
/// on a store without an index.
pub fn validate_ops(ops: &[StoreOp], has_index: bool) -> Result<(), StoreError> {
    for op in ops {
        match op {
            StoreOp::Get { namespace, key, .. } => {
                validate_namespace(namespace)?;
                validate_key(namespace, key)?;
            }
            StoreOp::Put {
                namespace,
                key,
                value,
                ..
            } => {
                validate_namespace(namespace)?;
                validate_key(namespace, key)?;
                if let Some(value) = value {
                    validate_value(namespace, key, value)?;
                }
            }
            StoreOp::Search {
                namespace_prefix,
                query,
            } => {
                validate_labels(namespace_prefix, false)?;
                if query.query.is_some() && !has_index {
                    return Err(StoreError::NoIndex);
                }
            }
            StoreOp::ListNamespaces(query) => {
                for labels in [&query.prefix, &query.suffix].into_iter().flatten() {
                    validate_labels(labels, true)?;
                }
            }
        }
    }
    Ok(())
}

/// The length of `value`'s compact JSON text, counted without building it.
fn json_len(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing a `Value` into a counter cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

fn invalid_namespace(namespace: &[String], reason: &str) -> StoreError {
    StoreError::InvalidNamespace {
        namespace: namespace.to_vec(),
        reason: reason.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn ns(labels: &[&str]) -> Vec<String> {
        labels.iter().map(|l| (*l).to_owned()).collect()
    }

    #[test]
    fn namespaces_keys_and_values_are_checked() {
        assert!(validate_namespace(&ns(&["users", "u1"])).is_ok());
        for bad in [
            &[][..],
            &["users", ""],
            &["a.b"],
            &["langgraph", "x"],
            &["*"],
        ] {
            assert!(
                matches!(
                    validate_namespace(&ns(bad)),
                    Err(StoreError::InvalidNamespace { .. })
                ),
                "{bad:?}"
            );
        }
        assert!(matches!(
            validate_key(&ns(&["a"]), ""),
            Err(StoreError::InvalidKey { .. })
        ));
        assert!(matches!(
            validate_value(&ns(&["a"]), "k", &json!([1])),
            Err(StoreError::NotAnObject { kind: "array", .. })
        ));
        let big = json!({ "text": "x".repeat(MAX_VALUE_BYTES) });
        assert!(matches!(
            validate_value(&ns(&["a"]), "k", &big),
            Err(StoreError::TooLarge { bytes, .. }) if bytes == MAX_VALUE_BYTES + 11
        ));
    }
}
