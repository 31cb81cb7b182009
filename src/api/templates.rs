//! [`TemplateInterner`]: one shared copy of each distinct pod template among many Workloads.
//!
//! Workloads made from one job template (every Workload of a Kueue performance-test class,
//! the replicas of a Deployment, the groups of a LeaderWorkerSet) carry identical pod
//! templates; a decoded `PodTemplateSpec` is ~1.8 KB inline plus its strings, more than the
//! rest of a pending Workload. The controller's mirror interns each Workload's templates as it
//! stores them, so 100,000 pending Workloads of a few job templates hold a few templates.
//! A template is found by a hash of its JSON form and confirmed equal before it is shared;
//! entries whose Workloads are all gone are dropped as new ones arrive (amortised O(1)).

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::{Arc, Weak};

use k8s_openapi::api::core::v1::PodTemplateSpec;

use super::Workload;

#[derive(Debug, Default, Clone)]
pub struct TemplateInterner {
    by_hash: HashMap<u64, Vec<Weak<PodTemplateSpec>>>,
    hasher: std::hash::RandomState,
    /// Entries added since the last sweep of dead ones.
    added: usize,
    /// Entries left by the last sweep: the next one comes after as many more (at least
    /// 1,024), so at most about twice the live entries are ever held.
    kept: usize,
}

/// An `io::Write` feeding a hasher: hashes a value's JSON form without building it.
struct HashWriter<H: Hasher>(H);

impl<H: Hasher> std::io::Write for HashWriter<H> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl TemplateInterner {
    /// Replaces `template` by the shared copy of an equal template, or makes it the shared
    /// copy.
    pub fn intern(&mut self, template: &mut Arc<PodTemplateSpec>) {
        let mut w = HashWriter(self.hasher.build_hasher());
        if serde_json::to_writer(&mut w, &**template).is_err() {
            return;
        }
        let hash = w.0.finish();
        let entries = self.by_hash.entry(hash).or_default();
        for e in entries.iter() {
            if let Some(shared) = e.upgrade() {
                if Arc::ptr_eq(&shared, template) {
                    return;
                }
                if *shared == **template {
                    *template = shared;
                    return;
                }
            }
        }
        entries.push(Arc::downgrade(template));
        self.added += 1;
        if self.added >= self.kept.max(1024) {
            self.sweep();
        }
    }

    /// Interns every pod template of a Workload.
    pub fn intern_workload(&mut self, wl: &mut Workload) {
        for ps in &mut wl.spec.pod_sets {
            self.intern(&mut ps.template);
        }
    }

    /// Distinct templates still in use.
    pub fn len(&self) -> usize {
        self.by_hash
            .values()
            .flatten()
            .filter(|e| e.strong_count() > 0)
            .count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn sweep(&mut self) {
        self.by_hash.retain(|_, entries| {
            entries.retain(|e| e.strong_count() > 0);
            !entries.is_empty()
        });
        self.kept = self.by_hash.values().map(Vec::len).sum();
        self.added = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Container, PodSpec};

    fn template(image: &str) -> Arc<PodTemplateSpec> {
        Arc::new(PodTemplateSpec {
            metadata: None,
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "c".into(),
                    image: Some(image.into()),
                    ..Container::default()
                }],
                ..PodSpec::default()
            }),
        })
    }

    #[test]
    fn equal_templates_share_one_copy_and_different_ones_do_not() {
        let mut i = TemplateInterner::default();
        let mut a = template("busybox");
        let mut b = template("busybox");
        let mut c = template("python");
        i.intern(&mut a);
        i.intern(&mut b);
        i.intern(&mut c);
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(
            c.spec.as_ref().unwrap().containers[0].image.as_deref(),
            Some("python")
        );
        assert_eq!(i.len(), 2);
        // Once no Workload holds it, a template is not kept alive by the interner.
        drop((a, b));
        assert_eq!(i.len(), 1);
        let mut d = template("busybox");
        i.intern(&mut d);
        assert_eq!(i.len(), 2);
    }

    #[test]
    fn dead_entries_are_swept_as_new_ones_arrive() {
        let mut i = TemplateInterner::default();
        for n in 0..5000 {
            let mut t = template(&format!("image-{n}"));
            i.intern(&mut t);
        }
        let entries: usize = i.by_hash.values().map(Vec::len).sum();
        assert!(
            entries <= 1024,
            "{entries} entries kept for no live template"
        );
    }
}
