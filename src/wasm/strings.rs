//! The string table of one plugin instance (WIT 0.5.0, `new-strings`): every namespace, job
//! kind, apiVersion and name, label and annotation key and value a plugin sees crosses the
//! boundary once, and records and columns carry its index instead.
//!
//! The host's side mirrors the guest's table: ids are handed out in order, and the strings
//! first used since the last call are sent with the next one. The table lives as long as the
//! instance (a discarded instance takes it along; a new one starts at 0), and starts again when
//! it grows past [`MAX_STRINGS`] or [`MAX_BYTES`] (workload names come and go, the table never
//! forgets them).

use rustc_hash::FxHashMap;

use super::bindings::types as t;

/// At most this many strings before the table starts again.
pub const MAX_STRINGS: u32 = 262_144;
/// At most this much text before the table starts again.
pub const MAX_BYTES: usize = 16 << 20;

/// One instance's table, as the host keeps it.
#[derive(Debug, Default)]
pub struct StringTable {
    ids: FxHashMap<Box<str>, u32>,
    bytes: usize,
    /// The id of the first string added since [`StringTable::begin`].
    first: u32,
    /// The strings added since then, in id order.
    added: Vec<String>,
}

impl StringTable {
    /// Starts a call: a table past its bounds starts again (the call then sends `first` = 0).
    pub fn begin(&mut self) {
        if self.ids.len() as u32 >= MAX_STRINGS || self.bytes >= MAX_BYTES {
            self.ids.clear();
            self.bytes = 0;
        }
        self.first = self.ids.len() as u32;
        self.added.clear();
    }

    /// The id of `s`, added to the table (and to this call's new strings) if new.
    pub fn intern(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = self.ids.len() as u32;
        self.ids.insert(s.into(), id);
        self.bytes += s.len();
        self.added.push(s.to_string());
        id
    }

    /// The strings this call adds, for the guest to append before it decides.
    pub fn take(&mut self) -> t::NewStrings {
        t::NewStrings {
            first: self.first,
            values: std::mem::take(&mut self.added),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_string_is_sent_once_with_the_call_that_first_uses_it() {
        let mut t = StringTable::default();
        t.begin();
        assert_eq!(
            (t.intern("prod"), t.intern("Job"), t.intern("prod")),
            (0, 1, 0)
        );
        let sent = t.take();
        assert_eq!(
            (sent.first, sent.values),
            (0, vec!["prod".into(), "Job".into()])
        );
        t.begin();
        assert_eq!((t.intern("Job"), t.intern("dev")), (1, 2));
        let sent = t.take();
        assert_eq!((sent.first, sent.values), (2, vec!["dev".to_string()]));
        t.begin();
        assert_eq!(t.take().values, Vec::<String>::new());
    }

    #[test]
    fn a_full_table_starts_again_at_zero() {
        let mut t = StringTable::default();
        t.begin();
        let big = "x".repeat(MAX_BYTES);
        t.intern(&big);
        t.intern("prod");
        t.take();
        t.begin();
        assert_eq!(t.intern("prod"), 0);
        let sent = t.take();
        assert_eq!((sent.first, sent.values), (0, vec!["prod".to_string()]));
    }
}
