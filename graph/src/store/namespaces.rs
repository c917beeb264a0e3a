//! Namespace matching: search prefixes and the listing rules (wildcard prefix and
//! suffix, depth cut, order, paging), shared by every backend.

use super::types::{Namespace, NamespaceQuery};

/// The label that matches any one label in a listing's prefix or suffix.
pub const WILDCARD: &str = "*";

/// Whether `namespace` starts with `prefix`, label by label (no wildcards: search).
pub fn has_prefix(namespace: &[String], prefix: &[String]) -> bool {
    namespace.len() >= prefix.len() && namespace.iter().zip(prefix).all(|(n, p)| n == p)
}

fn labels_match(labels: &[String], pattern: &[String]) -> bool {
    labels
        .iter()
        .zip(pattern)
        .all(|(l, p)| p == WILDCARD || l == p)
}

/// Whether `namespace` passes `query`'s prefix and suffix.
pub fn namespace_matches(namespace: &[String], query: &NamespaceQuery) -> bool {
    let prefix_ok = query
        .prefix
        .as_deref()
        .is_none_or(|p| namespace.len() >= p.len() && labels_match(&namespace[..p.len()], p));
    let suffix_ok = query.suffix.as_deref().is_none_or(|s| {
        namespace.len() >= s.len() && labels_match(&namespace[namespace.len() - s.len()..], s)
    });
    prefix_ok && suffix_ok
}

/// The listing of `query` over the namespaces that hold live items: those matching,
/// cut to `max_depth`, each once, sorted, then `offset` and `limit`.
pub fn list_matching<I>(namespaces: I, query: &NamespaceQuery) -> Vec<Namespace>
where
    I: IntoIterator,
    I::Item: AsRef<[String]>,
{
    let mut out = std::collections::BTreeSet::new();
    for ns in namespaces {
        let ns = ns.as_ref();
        if namespace_matches(ns, query) {
            let depth = query.max_depth.map_or(ns.len(), |d| d.min(ns.len()));
            out.insert(ns[..depth].to_vec());
        }
    }
    out.into_iter()
        .skip(query.offset)
        .take(query.limit)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns(labels: &[&str]) -> Namespace {
        labels.iter().map(|l| (*l).to_owned()).collect()
    }

    #[test]
    fn wildcards_depth_and_paging() {
        let all = [
            ns(&["a", "x", "1"]),
            ns(&["a", "y", "1"]),
            ns(&["b", "x"]),
            ns(&["a", "x", "2"]),
        ];
        let q = NamespaceQuery::new().prefix(&["a", "*"]).suffix(&["1"]);
        assert_eq!(
            list_matching(&all, &q),
            [ns(&["a", "x", "1"]), ns(&["a", "y", "1"])]
        );
        let q = NamespaceQuery::new().prefix(&["a"]).max_depth(2);
        assert_eq!(list_matching(&all, &q), [ns(&["a", "x"]), ns(&["a", "y"])]);
        let q = NamespaceQuery::new().offset(1).limit(2);
        assert_eq!(
            list_matching(&all, &q),
            [ns(&["a", "x", "2"]), ns(&["a", "y", "1"])]
        );
        assert!(has_prefix(&ns(&["a", "b"]), &ns(&["a"])));
        assert!(!has_prefix(&ns(&["a"]), &ns(&["a", "b"])));
    }
}
