//! What a head that is not admitted is told: [`Message`], a fixed text or a shared one, and
//! [`PendingTexts`], every flavor-assignment message built, by the reasons it says.
//!
//! A head that fails for reasons some head failed for before is told the same text, neither
//! formatted nor allocated again. In the steady state most heads that do not fit are such
//! heads (at ten times Kueue's large-scale, 2 M of them over 334 cycles), and building their
//! messages anew was 4% of the scheduler's instructions and one heap allocation per head and
//! cycle. A message is a function of its reasons alone: [`Names`] only ever grows, so an id
//! names the same flavor or resource for the life of the scheduler.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::Arc;

use hashbrown::HashTable;
use rustc_hash::FxHasher;

use crate::quota::Names;

use super::assign::{Assignment, NoFitReason, Reasons};

/// Kueue's message for an assignment without any reason recorded.
const NO_REASONS: &str = "couldn't assign flavors";

/// A pending workload's message: a fixed text, or one built once and shared by every decision
/// that repeats it (cloning it copies a pointer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    Fixed(&'static str),
    Shared(Arc<str>),
}

impl Deref for Message {
    type Target = str;

    fn deref(&self) -> &str {
        match self {
            Message::Fixed(s) => s,
            Message::Shared(s) => s,
        }
    }
}

impl fmt::Display for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self)
    }
}

impl From<&'static str> for Message {
    fn from(s: &'static str) -> Self {
        Message::Fixed(s)
    }
}

impl From<String> for Message {
    fn from(s: String) -> Self {
        Message::Shared(s.into())
    }
}

impl PartialEq<str> for Message {
    fn eq(&self, other: &str) -> bool {
        **self == *other
    }
}

impl PartialEq<&str> for Message {
    fn eq(&self, other: &&str) -> bool {
        **self == **other
    }
}

/// The most texts kept: past it the table starts again (a long-running controller meets ever
/// new amounts; a text already told stays valid, it is only built again when next needed).
const MAX_TEXTS: usize = 4096;

/// Every flavor-assignment message built, by the reasons it says. A small table every head
/// shares, read where a head's own record of its last message was a cache miss or two per
/// head and cycle at ten times Kueue's large scale, and a box and a text per workload whose
/// reasons changed.
#[derive(Debug, Default)]
pub(super) struct PendingTexts {
    by_reasons: HashTable<(Reasons, Arc<str>)>,
}

impl PendingTexts {
    /// Why `assignment` does not fit, in Kueue's words: its topology failure when it has one,
    /// else `couldn't assign flavors: ` and its podSets' reasons joined by `; `. Built only
    /// when no head was told these reasons before.
    pub fn message(&mut self, assignment: &Assignment, names: &Names) -> Message {
        if let Some(f) = assignment.topology_failed() {
            return f.message.clone().into();
        }
        if let Some(m) = assignment.topology_pending() {
            return m.to_string().into();
        }
        // Every podSet's reasons in order, read in place (no list is made to look one up).
        let reasons = || assignment.pod_sets.iter().flat_map(|ps| &ps.reasons);
        if reasons().next().is_none() {
            return NO_REASONS.into();
        }
        let hash = hash_of(reasons());
        if let Some((_, text)) = self
            .by_reasons
            .find(hash, |(told, _)| told.iter().eq(reasons()))
        {
            return Message::Shared(text.clone());
        }
        let text: Arc<str> = format_reasons(reasons(), names).into();
        if self.by_reasons.len() >= MAX_TEXTS {
            self.by_reasons.clear();
        }
        self.by_reasons.insert_unique(
            hash,
            (reasons().cloned().collect(), text.clone()),
            |(told, _)| hash_of(told.iter()),
        );
        Message::Shared(text)
    }
}

/// The table's hash of a list of reasons, element by element.
fn hash_of<'a>(reasons: impl Iterator<Item = &'a NoFitReason>) -> u64 {
    let mut h = FxHasher::default();
    for r in reasons {
        r.hash(&mut h);
    }
    h.finish()
}

/// `couldn't assign flavors: ` and the reasons, joined by `; ` (Kueue's
/// `Assignment.Message`).
fn format_reasons<'a>(reasons: impl Iterator<Item = &'a NoFitReason>, names: &Names) -> String {
    // Sized for the usual reasons (about 100 bytes each) up front.
    let mut out = String::with_capacity(160);
    out.push_str(NO_REASONS);
    out.push_str(": ");
    for (i, r) in reasons.enumerate() {
        if i > 0 {
            out.push_str("; ");
        }
        r.write(names, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use smallvec::smallvec;

    use super::*;
    use crate::policy::PolicyRef;
    use crate::quota::FrIdx;
    use crate::scheduler::PodSetAssignment;
    use crate::scheduler::tas::TopologyFailure;

    fn names() -> (Names, FrIdx, FrIdx) {
        let mut names = Names::default();
        let (cpu, memory) = (names.resource("cpu"), names.resource("memory"));
        let flavor = names.flavor("default");
        let (a, b) = (names.fr(flavor, cpu), names.fr(flavor, memory));
        (names, a, b)
    }

    fn failing(reasons: Reasons) -> Assignment {
        Assignment {
            pod_sets: smallvec![PodSetAssignment {
                count: 1,
                flavors: smallvec![],
                failed: true,
                reasons,
            }],
            usage: Default::default(),
            borrowing: 0,
            complete: false,
            pending_flavors: false,
            policy: PolicyRef::builtin(),
            tas: None,
        }
    }

    fn shared(m: &Message) -> &Arc<str> {
        match m {
            Message::Shared(text) => text,
            Message::Fixed(s) => panic!("a fixed message: {s}"),
        }
    }

    #[test]
    fn the_same_reasons_are_told_with_the_same_text_and_new_ones_anew() {
        let (names, cpu, memory) = names();
        let mut texts = PendingTexts::default();
        let short = failing(smallvec![NoFitReason::Insufficient {
            fr: cpu,
            more: 2000
        }]);
        let first = texts.message(&short, &names);
        assert_eq!(
            first,
            "couldn't assign flavors: insufficient unused quota for cpu in flavor default, 2 more needed"
        );
        let again = texts.message(&short.clone(), &names);
        assert!(
            Arc::ptr_eq(shared(&first), shared(&again)),
            "not built again"
        );

        // Another amount is another text, shared by every head told it.
        let shorter = failing(smallvec![NoFitReason::Insufficient {
            fr: cpu,
            more: 1000
        }]);
        let changed = texts.message(&shorter, &names);
        assert!(changed.ends_with("1 more needed"), "{changed}");
        assert!(!Arc::ptr_eq(shared(&first), shared(&changed)));
        assert!(Arc::ptr_eq(
            shared(&changed),
            shared(&texts.message(&shorter, &names))
        ));

        // Two reasons, joined as Kueue joins them.
        let both = failing(smallvec![
            NoFitReason::Insufficient {
                fr: cpu,
                more: 1000
            },
            NoFitReason::Insufficient {
                fr: memory,
                more: (1 << 30) * 1000
            },
        ]);
        assert_eq!(
            texts.message(&both, &names),
            "couldn't assign flavors: insufficient unused quota for cpu in flavor default, 1 more needed; \
             insufficient unused quota for memory in flavor default, 1Gi more needed"
        );

        // Two podSets: their reasons in order, compared as one list.
        let mut split = failing(smallvec![NoFitReason::Insufficient {
            fr: cpu,
            more: 1000
        }]);
        let mut second = split.pod_sets[0].clone();
        second.reasons = smallvec![NoFitReason::Insufficient {
            fr: memory,
            more: (1 << 30) * 1000
        }];
        split.pod_sets.push(second);
        let joined = texts.message(&both, &names);
        let from_two = texts.message(&split, &names);
        assert!(Arc::ptr_eq(shared(&joined), shared(&from_two)));
        split.pod_sets[1].reasons[0] = NoFitReason::Insufficient {
            fr: memory,
            more: 1000,
        };
        assert!(
            texts
                .message(&split, &names)
                .ends_with("memory in flavor default, 1 more needed")
        );
    }

    #[test]
    fn the_table_starts_again_when_full() {
        let (names, cpu, _) = names();
        let mut texts = PendingTexts::default();
        let short = |more| failing(smallvec![NoFitReason::Insufficient { fr: cpu, more }]);
        let kept = texts.message(&short(1000), &names);
        for more in 2..=MAX_TEXTS as i64 {
            texts.message(&short(more * 1000), &names);
        }
        assert_eq!(texts.by_reasons.len(), MAX_TEXTS);
        // The next new reasons empty the table first: it never holds more than its bound.
        texts.message(&short(0), &names);
        assert_eq!(texts.by_reasons.len(), 1);
        let rebuilt = texts.message(&short(1000), &names);
        assert_eq!(kept, rebuilt, "the same words");
        assert!(!Arc::ptr_eq(shared(&kept), shared(&rebuilt)), "built again");
    }

    #[test]
    fn a_topology_failure_or_no_reason_is_told_as_is() {
        let (names, cpu, _) = names();
        let mut texts = PendingTexts::default();
        assert_eq!(
            texts.message(&failing(smallvec![]), &names),
            Message::Fixed("couldn't assign flavors")
        );
        let mut placed = failing(smallvec![NoFitReason::Insufficient { fr: cpu, more: 1 }]);
        placed.tas_mut().failed = Some(TopologyFailure {
            message: "no fit".into(),
            label: "Pending",
        });
        assert_eq!(texts.message(&placed, &names), "no fit");
        placed.tas_mut().failed = None;
        placed.tas_mut().pending = Some("fits once preempted".into());
        assert_eq!(texts.message(&placed, &names), "fits once preempted");
    }
}
