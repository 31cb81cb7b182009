//! What a head that is not admitted is told: [`Message`], a fixed text or a shared one, and
//! [`PendingTexts`], every flavor-assignment message built, by the reasons it says.
//!
//! A head that fails for reasons some head failed for before is told the same text, neither
//! formatted nor allocated again. In the steady state most heads that do not fit are such
//! heads (at ten times Kueue's large-scale, 2 M of them over 334 cycles), and building their
//! messages anew was 4% of the scheduler's instructions and one heap allocation per head and
//! cycle. A podSet's part of a message is a function of its name and reasons alone: [`Names`]
//! only ever grows, so an id names the same flavor or resource for the life of the scheduler.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::Arc;

use hashbrown::HashTable;
use rustc_hash::FxHasher;
use smallvec::SmallVec;

use crate::cluster::PodSetInfo;
use crate::quota::Names;

use super::assign::{Assignment, Reasons};

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

/// Every podSet's flavor-assignment message built, by its podSet's name and the reasons it
/// says. A small table every head shares, read where a head's own record of its last message
/// was a cache miss or two per head and cycle at ten times Kueue's large scale, and a box and a
/// text per workload whose reasons changed.
#[derive(Debug, Default)]
pub(super) struct PendingTexts {
    by_reasons: HashTable<(Arc<str>, Reasons, Arc<str>)>,
}

impl PendingTexts {
    /// Why `assignment` does not fit, in Kueue's words (`Assignment.Message`): its topology
    /// failure when it has one, else for each podSet with reasons `couldn't assign flavors to
    /// pod set NAME: ` and its reasons sorted and joined by `, `, podSets joined by `; `.
    /// `pod_sets` are the workload's. A podSet's part is built only when no head was told it
    /// before.
    pub fn message(
        &mut self,
        assignment: &Assignment,
        names: &Names,
        pod_sets: &[PodSetInfo],
    ) -> Message {
        if let Some(f) = assignment.topology_failed() {
            return f.message.clone().into();
        }
        if let Some(m) = assignment.topology_pending() {
            return m.to_string().into();
        }
        let mut told = assignment
            .pod_sets
            .iter()
            .zip(pod_sets)
            .filter(|(psa, _)| !psa.reasons.is_empty());
        let Some((psa, ps)) = told.next() else {
            return NO_REASONS.into();
        };
        let first = self.pod_set_text(&ps.name, &psa.reasons, names);
        let Some((psa, ps)) = told.next() else {
            return Message::Shared(first);
        };
        let mut text = String::from(&*first);
        for (psa, ps) in std::iter::once((psa, ps)).chain(told) {
            text.push_str("; ");
            text.push_str(&self.pod_set_text(&ps.name, &psa.reasons, names));
        }
        text.into()
    }

    fn pod_set_text(&mut self, pod_set: &Arc<str>, reasons: &Reasons, names: &Names) -> Arc<str> {
        let hash = hash_of(pod_set, reasons);
        if let Some((_, _, text)) = self
            .by_reasons
            .find(hash, |(name, told, _)| name == pod_set && told == reasons)
        {
            return text.clone();
        }
        let text: Arc<str> = format_reasons(pod_set, reasons, names).into();
        if self.by_reasons.len() >= MAX_TEXTS {
            self.by_reasons.clear();
        }
        self.by_reasons.insert_unique(
            hash,
            (pod_set.clone(), reasons.clone(), text.clone()),
            |(name, told, _)| hash_of(name, told),
        );
        text
    }
}

/// The table's hash of a podSet's name and reasons.
fn hash_of(pod_set: &str, reasons: &Reasons) -> u64 {
    let mut h = FxHasher::default();
    pod_set.hash(&mut h);
    for r in reasons {
        r.hash(&mut h);
    }
    h.finish()
}

/// `couldn't assign flavors to pod set NAME: ` and the reasons, sorted and joined by `, `
/// (Kueue's `Status.Message`).
fn format_reasons(pod_set: &str, reasons: &Reasons, names: &Names) -> String {
    let mut said: SmallVec<[String; 2]> = reasons.iter().map(|r| r.to_string(names)).collect();
    said.sort_unstable();
    // Sized for the usual reasons (about 100 bytes each) up front.
    let mut out = String::with_capacity(160);
    out.push_str(NO_REASONS);
    out.push_str(" to pod set ");
    out.push_str(pod_set);
    out.push_str(": ");
    for (i, r) in said.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(r);
    }
    out
}

#[cfg(test)]
mod tests {
    use smallvec::smallvec;

    use super::super::assign::NoFitReason;
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

    /// A workload's two podSets, `main` and `worker`.
    fn pod_sets() -> Vec<PodSetInfo> {
        ["main", "worker"]
            .into_iter()
            .map(|name| PodSetInfo {
                requests: smallvec![],
                topology: None,
                constraints: None,
                count: 1,
                min_count: None,
                name: name.into(),
            })
            .collect()
    }

    fn failing(reasons: Reasons) -> Assignment {
        Assignment {
            pod_sets: smallvec![PodSetAssignment {
                count: 1,
                flavors: smallvec![],
                failed: true,
                reasons,
                no_fit: None,
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
        let first = texts.message(&short, &names, &pod_sets());
        assert_eq!(
            first,
            "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, 2 more needed"
        );
        let again = texts.message(&short.clone(), &names, &pod_sets());
        assert!(
            Arc::ptr_eq(shared(&first), shared(&again)),
            "not built again"
        );

        // Another amount is another text, shared by every head told it.
        let shorter = failing(smallvec![NoFitReason::Insufficient {
            fr: cpu,
            more: 1000
        }]);
        let changed = texts.message(&shorter, &names, &pod_sets());
        assert!(changed.ends_with("1 more needed"), "{changed}");
        assert!(!Arc::ptr_eq(shared(&first), shared(&changed)));
        assert!(Arc::ptr_eq(
            shared(&changed),
            shared(&texts.message(&shorter, &names, &pod_sets()))
        ));

        // Two reasons, sorted and joined as Kueue joins them.
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
            texts.message(&both, &names, &pod_sets()),
            "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, 1 more needed, \
             insufficient unused quota for memory in flavor default, 1Gi more needed"
        );

        // Two podSets: each its own part, in order, joined by `; `; each part is shared.
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
        assert_eq!(
            texts.message(&split, &names, &pod_sets()),
            "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, 1 more needed; \
             couldn't assign flavors to pod set worker: insufficient unused quota for memory in flavor default, 1Gi more needed"
        );
        split.pod_sets[1].reasons[0] = NoFitReason::Insufficient {
            fr: memory,
            more: 1000,
        };
        assert!(
            texts
                .message(&split, &names, &pod_sets())
                .ends_with("memory in flavor default, 1 more needed")
        );
        // The same reasons under another podSet's name are another text.
        split.pod_sets[0].reasons.clear();
        let worker = texts.message(&split, &names, &pod_sets());
        assert!(
            worker.starts_with("couldn't assign flavors to pod set worker: "),
            "{worker}"
        );
    }

    #[test]
    fn the_table_starts_again_when_full() {
        let (names, cpu, _) = names();
        let mut texts = PendingTexts::default();
        let short = |more| failing(smallvec![NoFitReason::Insufficient { fr: cpu, more }]);
        let kept = texts.message(&short(1000), &names, &pod_sets());
        for more in 2..=MAX_TEXTS as i64 {
            texts.message(&short(more * 1000), &names, &pod_sets());
        }
        assert_eq!(texts.by_reasons.len(), MAX_TEXTS);
        // The next new reasons empty the table first: it never holds more than its bound.
        texts.message(&short(0), &names, &pod_sets());
        assert_eq!(texts.by_reasons.len(), 1);
        let rebuilt = texts.message(&short(1000), &names, &pod_sets());
        assert_eq!(kept, rebuilt, "the same words");
        assert!(!Arc::ptr_eq(shared(&kept), shared(&rebuilt)), "built again");
    }

    #[test]
    fn a_topology_failure_or_no_reason_is_told_as_is() {
        let (names, cpu, _) = names();
        let mut texts = PendingTexts::default();
        assert_eq!(
            texts.message(&failing(smallvec![]), &names, &pod_sets()),
            Message::Fixed("couldn't assign flavors")
        );
        let mut placed = failing(smallvec![NoFitReason::Insufficient { fr: cpu, more: 1 }]);
        placed.tas_mut().failed = Some(TopologyFailure {
            message: "no fit".into(),
            label: "Pending",
        });
        assert_eq!(texts.message(&placed, &names, &pod_sets()), "no fit");
        placed.tas_mut().failed = None;
        placed.tas_mut().pending = Some("fits once preempted".into());
        assert_eq!(
            texts.message(&placed, &names, &pod_sets()),
            "fits once preempted"
        );
    }
}
