//! [`StrMap`]: a workload's labels or annotations, kept compact. Every workload record holds
//! two such maps for the life of the run; a `BTreeMap<String, String>` spends a B-tree leaf
//! of about 540 bytes on its first entry, so three annotations took ≈ 730 bytes per workload
//! (270 MB at ten times Kueue's large scale). A sorted boxed slice holds the same in one
//! allocation of 32 bytes per entry plus the strings.

use std::collections::BTreeMap;

/// String keys and values, sorted by key, each key once; read by key or in key order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StrMap(Box<[(Box<str>, Box<str>)]>);

impl StrMap {
    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .binary_search_by(|(k, _)| (**k).cmp(key))
            .ok()
            .map(|i| &*self.0[i].1)
    }

    /// Every entry, in key order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &str)> + '_ {
        self.0.iter().map(|(k, v)| (&**k, &**v))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Bytes on the heap: the entries and their strings.
    pub fn heap_bytes(&self) -> usize {
        self.0.len() * std::mem::size_of::<(Box<str>, Box<str>)>()
            + self.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>()
    }
}

impl From<&BTreeMap<String, String>> for StrMap {
    fn from(map: &BTreeMap<String, String>) -> Self {
        StrMap(
            map.iter()
                .map(|(k, v)| (k.as_str().into(), v.as_str().into()))
                .collect(),
        )
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for StrMap {
    /// As a `BTreeMap` collects: sorted, a later value replacing an earlier one of its key.
    fn from_iter<I: IntoIterator<Item = (K, V)>>(entries: I) -> Self {
        let map: BTreeMap<String, String> = entries
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        StrMap::from(&map)
    }
}

#[cfg(test)]
mod tests {
    use super::StrMap;

    #[test]
    fn reads_like_the_map_it_was_made_from() {
        let m: StrMap = [("b", "2"), ("a", "1"), ("c", "3"), ("a", "0")]
            .into_iter()
            .collect();
        assert_eq!(m.len(), 3);
        assert_eq!(
            m.get("a"),
            Some("0"),
            "a later value replaces an earlier one"
        );
        assert_eq!(m.get("c"), Some("3"));
        assert_eq!(m.get("d"), None);
        assert_eq!(m.get(""), None);
        assert_eq!(
            m.iter().collect::<Vec<_>>(),
            [("a", "0"), ("b", "2"), ("c", "3")]
        );
        assert!(StrMap::default().is_empty());
        assert_eq!(StrMap::default().get("a"), None);
    }
}
