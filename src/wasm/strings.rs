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
    /// Each workload's identity as ids of this table, by workload handle, for the cluster
    /// configuration `idents_of` (a workload's identity never changes within one: a new
    /// Workload object means a rebuilt cluster). Heads and candidates are sent again and
    /// again; this makes each one an array read instead of hashing its strings. Dense (24
    /// bytes a workload); the few labels and annotations live in `extras`.
    idents: Vec<Ident>,
    extras: Vec<Extras>,
    idents_of: u64,
}

/// A workload's identity as string ids: what `record workload` and the identity columns carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ident {
    pub namespace: u32,
    /// Kind, apiVersion and name of the owning job; [`NONE`] each for none.
    pub owner: [u32; 3],
    /// Its labels and annotations: an index into the table's extras, or [`NONE`] for none.
    extras: u32,
}

/// No string, no extras (the WIT's `no-string`); also marks an identity not computed yet.
pub const NONE: u32 = u32::MAX;

impl Ident {
    /// The owning job as the WIT's `owner` record; `None` for a bare Workload.
    pub fn owner(&self) -> Option<crate::wasm::bindings::types::Owner> {
        let [kind, api_version, name] = self.owner;
        (kind != NONE).then_some(crate::wasm::bindings::types::Owner {
            kind,
            api_version,
            name,
        })
    }
}

const UNSET: Ident = Ident {
    namespace: NONE,
    owner: [NONE; 3],
    extras: NONE,
};

/// What [`StringTable::ident`]'s `make` returns: namespace, owner, labels and annotations.
pub type Made = (u32, Option<[u32; 3]>, Pairs, Pairs);

/// Labels and annotations the plugin's allow-list passes, (key, value).
pub type Pairs = Box<[(u32, u32)]>;
type Extras = (Pairs, Pairs);

impl StringTable {
    /// Starts a call: a table past its bounds starts again (the call then sends `first` = 0).
    /// Returns whether it did: ids the instance holds elsewhere (in its table of heads) then
    /// name nothing.
    pub fn begin(&mut self) -> bool {
        let again = self.ids.len() as u32 >= MAX_STRINGS || self.bytes >= MAX_BYTES;
        if again {
            self.ids.clear();
            self.bytes = 0;
            self.idents.clear();
            self.extras.clear();
        }
        self.first = self.ids.len() as u32;
        self.added.clear();
        again
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

    /// The identity of workload `index` in cluster configuration `config`: `make` (which
    /// interns into this table) gives its namespace, owner, labels and annotations the first
    /// time it is asked for.
    #[inline]
    pub fn ident(
        &mut self,
        config: u64,
        index: usize,
        make: impl FnOnce(&mut StringTable) -> Made,
    ) -> Ident {
        if self.idents_of == config
            && let Some(&ident) = self.idents.get(index)
            && ident.namespace != NONE
        {
            return ident;
        }
        let made = make(self);
        self.make_ident(config, index, made)
    }

    /// [`StringTable::ident`] the first time: records what `make` gave (off the fast path,
    /// which is one array read per workload).
    #[cold]
    #[inline(never)]
    fn make_ident(&mut self, config: u64, index: usize, made: Made) -> Ident {
        if self.idents_of != config {
            self.idents.clear();
            self.extras.clear();
            self.idents_of = config;
        }
        let (namespace, owner, labels, annotations) = made;
        let extras = if labels.is_empty() && annotations.is_empty() {
            NONE
        } else {
            self.extras.push((labels, annotations));
            (self.extras.len() - 1) as u32
        };
        let ident = Ident {
            namespace,
            owner: owner.unwrap_or([NONE; 3]),
            extras,
        };
        if self.idents.len() <= index {
            self.idents.resize(index + 1, UNSET);
        }
        self.idents[index] = ident;
        ident
    }

    /// The labels of an identity this table made.
    pub fn labels(&self, ident: Ident) -> &[(u32, u32)] {
        self.extras.get(ident.extras as usize).map_or(&[], |e| &e.0)
    }

    /// The annotations of an identity this table made.
    pub fn annotations(&self, ident: Ident) -> &[(u32, u32)] {
        self.extras.get(ident.extras as usize).map_or(&[], |e| &e.1)
    }

    /// The strings this call adds, for the guest to append before it decides; `None` when it
    /// adds none. A table started again with no string yet is sent with its
    /// first string, as `first` 0: no call refers to the guest's old strings in between.
    pub fn take(&mut self) -> Option<t::NewStrings> {
        if self.added.is_empty() {
            return None;
        }
        Some(t::NewStrings {
            first: self.first,
            values: std::mem::take(&mut self.added),
        })
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
        let sent = t.take().expect("strings added");
        assert_eq!(
            (sent.first, sent.values),
            (0, vec!["prod".into(), "Job".into()])
        );
        t.begin();
        assert_eq!((t.intern("Job"), t.intern("dev")), (1, 2));
        let sent = t.take().expect("strings added");
        assert_eq!((sent.first, sent.values), (2, vec!["dev".to_string()]));
        t.begin();
        assert!(t.take().is_none(), "a call that adds no string sends none");
    }

    #[test]
    fn identities_are_made_once_per_configuration_and_table() {
        let mut t = StringTable::default();
        t.begin();
        let make = |t: &mut StringTable| {
            let label = (t.intern("team"), t.intern("ml"));
            (t.intern("prod"), None, Box::from([label]), Box::from([]))
        };
        let ident = t.ident(1, 3, make);
        assert_eq!((ident.namespace, ident.owner), (2, [NONE; 3]));
        assert_eq!(
            (t.labels(ident), t.annotations(ident)),
            (&[(0, 1)][..], &[][..])
        );
        // Cached: `make` is not called again.
        assert_eq!(t.ident(1, 3, |_| unreachable!()), ident);
        // Another configuration: made again.
        let mut made = false;
        t.ident(2, 3, |t| {
            made = true;
            make(t)
        });
        assert!(made);
    }

    #[test]
    fn identities_are_made_again_when_the_table_starts_again() {
        let mut t = StringTable::default();
        t.begin();
        let make = |t: &mut StringTable| {
            let label = (t.intern("team"), t.intern("ml"));
            (t.intern("prod"), None, Box::from([label]), Box::from([]))
        };
        let big = "x".repeat(MAX_BYTES);
        t.intern(&big);
        let before = t.ident(1, 3, make);
        assert_eq!(before.namespace, 3);
        assert_eq!(t.labels(before), &[(1, 2)][..]);
        t.take();
        // Past its bounds: the next call starts the table (and the guest's) again at 0, so
        // the cached ids (3, and 1 and 2 for the label) name nothing any more.
        t.begin();
        let mut made = false;
        let after = t.ident(1, 3, |t| {
            made = true;
            make(t)
        });
        assert!(made, "a cached identity outlived its string table");
        assert_eq!((after.namespace, t.labels(after)), (2, &[(0, 1)][..]));
        // Its strings are sent again, with the call that uses them.
        let sent = t.take().expect("strings added");
        assert_eq!(
            (sent.first, sent.values),
            (0, vec!["team".to_string(), "ml".into(), "prod".into()])
        );
        // And cached again from then on.
        t.begin();
        assert_eq!(t.ident(1, 3, |_| unreachable!()), after);
        assert!(t.take().is_none(), "a call that adds no string sends none");
    }

    #[test]
    fn a_full_table_starts_again_at_zero() {
        let mut t = StringTable::default();
        t.begin();
        let big = "x".repeat(MAX_BYTES);
        t.intern(&big);
        t.intern("prod");
        t.take();
        // Started again, with no string in this call: nothing to send yet.
        t.begin();
        assert!(t.take().is_none());
        // The next string starts the guest's table at 0.
        t.begin();
        assert_eq!(t.intern("prod"), 0);
        let sent = t.take().expect("strings added");
        assert_eq!((sent.first, sent.values), (0, vec!["prod".to_string()]));
    }
}
