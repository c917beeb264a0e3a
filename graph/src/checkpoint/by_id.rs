//! `ById`: the in-memory saver's map of a namespace's checkpoints (and writes) by
//! checkpoint id, in the order they were stored.

use std::collections::HashMap;

/// A map keyed by checkpoint id, kept in insertion order: the order of a thread's
/// checkpoints is the order they were stored in (the chain's), never their ids'
/// (which come from a clock that may step back).
///
/// Ids usually grow with time, so while every new id is greater than the last one the
/// vector is sorted both ways and lookups are binary searches; a new id goes at the
/// end with no index to update. An id out of order (a clock that stepped back, a
/// hand-made id) switches the map to a hash index, built once and kept from then on.
#[derive(Clone)]
pub(crate) struct ById<V> {
    pub(crate) entries: Vec<(String, V)>,
    /// Positions by id, once the ids stopped growing in insertion order.
    index: Option<HashMap<String, usize>>,
}

impl<V> Default for ById<V> {
    fn default() -> Self {
        Self {
            entries: Vec::new(),
            index: None,
        }
    }
}

impl<V> ById<V> {
    /// Where `id` is.
    fn find(&self, id: &str) -> Option<usize> {
        match &self.index {
            Some(index) => index.get(id).copied(),
            // A new id is usually greater than every stored one: no search then.
            None if self
                .entries
                .last()
                .is_none_or(|(last, _)| last.as_str() < id) =>
            {
                None
            }
            None => self
                .entries
                .binary_search_by(|(k, _)| k.as_str().cmp(id))
                .ok(),
        }
    }

    /// Appends `id` (not present), switching to a hash index when it is out of order.
    fn push(&mut self, id: String, value: V) -> usize {
        let at = self.entries.len();
        match &mut self.index {
            Some(index) => {
                index.insert(id.clone(), at);
            }
            None if self.entries.last().is_some_and(|(last, _)| *last >= id) => {
                let mut index: HashMap<String, usize> = self
                    .entries
                    .iter()
                    .enumerate()
                    .map(|(at, (k, _))| (k.clone(), at))
                    .collect();
                index.insert(id.clone(), at);
                self.index = Some(index);
            }
            None => {}
        }
        self.entries.push((id, value));
        at
    }

    /// Stores `value` at `id`: in place when present (keeping its position), else last.
    pub(crate) fn insert(&mut self, id: String, value: V) {
        match self.find(&id) {
            Some(at) => self.entries[at].1 = value,
            None => {
                self.push(id, value);
            }
        }
    }

    pub(crate) fn get_or_default(&mut self, id: String) -> &mut V
    where
        V: Default,
    {
        let at = match self.find(&id) {
            Some(at) => at,
            None => self.push(id, V::default()),
        };
        &mut self.entries[at].1
    }

    pub(crate) fn get(&self, id: &str) -> Option<&V> {
        self.get_key_value(id).map(|(_, v)| v)
    }

    pub(crate) fn get_key_value(&self, id: &str) -> Option<(&String, &V)> {
        let at = self.find(id)?;
        self.entries.get(at).map(|(k, v)| (k, v))
    }

    /// The last stored.
    pub(crate) fn last_key_value(&self) -> Option<(&String, &V)> {
        self.entries.last().map(|(k, v)| (k, v))
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// In insertion order.
    #[cfg(test)]
    pub(crate) fn iter(&self) -> impl DoubleEndedIterator<Item = (&String, &V)> {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    /// Those stored before `id`, in insertion order; none when `id` is unknown.
    pub(crate) fn before(&self, id: &str) -> &[(String, V)] {
        match self.find(id) {
            Some(at) => &self.entries[..at],
            None => &[],
        }
    }

    /// Removes the `n` first stored; returns their ids.
    pub(crate) fn drain_first(&mut self, n: usize) -> Vec<String> {
        let dropped: Vec<String> = self.entries.drain(..n).map(|(id, _)| id).collect();
        self.reindex();
        dropped
    }

    /// Keeps the entries for which `keep` holds.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&str) -> bool) {
        self.entries.retain(|(id, _)| keep(id));
        self.reindex();
    }

    fn reindex(&mut self) {
        if let Some(index) = &mut self.index {
            index.clear();
            index.extend(
                self.entries
                    .iter()
                    .enumerate()
                    .map(|(at, (k, _))| (k.clone(), at)),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ById;

    #[test]
    fn by_id_keeps_insertion_order_whatever_the_ids() {
        let mut map = ById::default();
        for id in ["b", "d", "a", "c", "e", "c"] {
            map.insert(id.to_string(), id.to_uppercase());
        }
        let keys: Vec<&str> = map.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["b", "d", "a", "c", "e"]);
        assert_eq!(map.len(), 5);
        assert_eq!(map.get("c").map(String::as_str), Some("C"));
        assert_eq!(map.get("f"), None);
        assert_eq!(map.last_key_value().map(|(k, _)| k.as_str()), Some("e"));
        map.get_or_default("bb".to_string()).push('!');
        map.get_or_default("bb".to_string()).push('?');
        assert_eq!(map.get("bb").map(String::as_str), Some("!?"));
        let before: Vec<&str> = map.before("c").iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(before, ["b", "d", "a"]);
        assert!(map.before("zz").is_empty());
        assert_eq!(map.drain_first(2), ["b", "d"]);
        assert_eq!(map.get("a").map(String::as_str), Some("A"));
        map.retain(|id| id != "a");
        let order: Vec<&str> = map.iter().rev().map(|(k, _)| k.as_str()).collect();
        assert_eq!(order, ["bb", "e", "c"]);
        assert_eq!(map.get("e").map(String::as_str), Some("E"));
    }

    #[test]
    fn by_id_in_growing_order_needs_no_index() {
        let mut map = ById::default();
        for id in ["a", "b", "c"] {
            map.insert(id.to_string(), ());
        }
        assert!(map.index.is_none());
        assert!(map.get("b").is_some());
        map.insert("a".to_string(), ());
        assert!(map.index.is_none(), "replacing keeps the order");
        map.insert("0".to_string(), ());
        assert!(map.index.is_some());
        assert_eq!(map.last_key_value().map(|(k, _)| k.as_str()), Some("0"));
    }
}
