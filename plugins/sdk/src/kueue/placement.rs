//! Kueue's default placement (`findTopologyAssignment` in
//! `pkg/cache/scheduler/tas_flavor_snapshot.go`) over the request's columns, deciding exactly as
//! the host's built-in: BestFit by domain, then the lowest level's tightest fit; a preferred
//! level falls back upward, then spans domains; unconstrained requests take the least free
//! capacity first (`TASProfileMixed`); slices of one layer stay within their domain.
//!
//! Ties between domains are broken by their values, which is their index order in the columns.
//! The "no fit" message is Kueue's without the node exclusion counts, which the host appends.

use crate::catalog::Catalog;
use crate::placement::{Answer, ConstraintMode, DomainId, LeafPods, Request, Tree};

/// Kueue's placement of `req`.
pub fn place(catalog: &Catalog, req: &Request) -> Answer {
    if req.count == 0 {
        return Answer::Placed(Vec::new());
    }
    let tree = Tree::new(req);
    match Search::new(catalog, &tree).run() {
        Ok(leaves) => Answer::Placed(leaves),
        Err(message) => Answer::NoFit(message),
    }
}

/// Per-domain state of one search: pods and slices that fit (then: assigned).
struct Search<'t, 'r> {
    catalog: &'t Catalog,
    tree: &'t Tree<'r>,
    req: &'r Request,
    pods: Vec<i32>,
    slices: Vec<i32>,
    least_free: bool,
    required: bool,
    unconstrained: bool,
    slice_level: usize,
    slice_size: i32,
    count: i32,
}

impl<'t, 'r> Search<'t, 'r> {
    fn new(catalog: &'t Catalog, tree: &'t Tree<'r>) -> Self {
        let req = tree.request();
        let n = tree.domains();
        let c = req.constraint;
        let unconstrained = c.mode == ConstraintMode::Unconstrained;
        Search {
            catalog,
            tree,
            req,
            pods: vec![0; n],
            slices: vec![0; n],
            least_free: unconstrained,
            required: c.mode == ConstraintMode::Required,
            unconstrained,
            slice_level: c.slice_level as usize,
            slice_size: i32::try_from(c.slice_size).unwrap_or(i32::MAX).max(1),
            count: i32::try_from(req.count).unwrap_or(i32::MAX),
        }
    }

    fn topology(&self) -> &str {
        self.catalog.string(self.req.topology)
    }

    fn level_name(&self, level: usize) -> &str {
        self.req
            .level_names
            .get(level)
            .map_or("", |&s| self.catalog.string(s))
    }

    /// Phase 1 (Kueue's `fillInCounts`).
    fn fill_in_counts(&mut self) {
        for leaf in 0..self.tree.leaves() as u32 {
            if self.tree.eligible(leaf) {
                let d = self.tree.leaf_domain(leaf) as usize;
                self.pods[d] = self.tree.fits_on(leaf).0;
            }
        }
        for &root in self.tree.at_level(0) {
            self.fill_helper(root);
        }
    }

    fn fill_helper(&mut self, d: DomainId) {
        let (mut pods, mut slices) = (0i32, 0i32);
        let children = self.tree.children(d);
        for &child in children {
            self.fill_helper(child);
            pods = pods.saturating_add(self.pods[child as usize]);
            slices = slices.saturating_add(self.slices[child as usize]);
        }
        let i = d as usize;
        if !children.is_empty() {
            self.pods[i] = pods;
        }
        self.slices[i] = if self.tree.level(d) == self.slice_level {
            self.pods[i] / self.slice_size
        } else {
            slices
        };
    }

    /// Kueue's `sortedDomains`: slices (descending for BestFit, ascending for least free
    /// capacity), then pods ascending, then values (index order).
    fn sorted(&self, mut ds: Vec<DomainId>) -> Vec<DomainId> {
        ds.sort_by(|&a, &b| {
            let (sa, sb) = (self.slices[a as usize], self.slices[b as usize]);
            let by_slices = if self.least_free {
                sa.cmp(&sb)
            } else {
                sb.cmp(&sa)
            };
            by_slices
                .then(self.pods[a as usize].cmp(&self.pods[b as usize]))
                .then(a.cmp(&b))
        });
        ds
    }

    fn count_of(&self, d: DomainId, slices: bool) -> i32 {
        if slices {
            self.slices[d as usize]
        } else {
            self.pods[d as usize]
        }
    }

    /// Kueue's `findBestFitDomainBy`: the first domain with the smallest count that still holds
    /// `needed`; the first domain when none does.
    fn best_fit(&self, ds: &[DomainId], needed: i32, slices: bool) -> DomainId {
        let mut best: Option<(DomainId, i32)> = None;
        for &d in ds {
            let c = self.count_of(d, slices);
            if c >= needed && best.is_none_or(|(_, b)| c < b) {
                best = Some((d, c));
            }
        }
        best.map_or(ds[0], |(d, _)| d)
    }

    fn not_fit(&self, fit: i32, total: i32) -> String {
        let unit = if self.slice_size == 1 { "pod" } else { "slice" };
        let topology = self.topology();
        if fit == 0 {
            format!("topology {topology:?} doesn't allow to fit any of {total} {unit}(s)")
        } else {
            format!("topology {topology:?} allows to fit only {fit} out of {total} {unit}(s)")
        }
    }

    /// Phase 2a (Kueue's `findLevelWithFitDomains`).
    fn find_level_with_fit(&self, level: usize) -> Result<(usize, Vec<DomainId>), String> {
        let domains = self.tree.at_level(level);
        if domains.is_empty() {
            return Err(format!(
                "no topology domains at level: {}",
                self.level_name(level)
            ));
        }
        let sorted = self.sorted(domains.to_vec());
        let need = self.count / self.slice_size;
        let mut top = sorted[0];
        if !self.least_free && self.slices[top as usize] >= need {
            top = self.best_fit(&sorted, need, true);
        }
        if self.least_free {
            if let Some(&d) = sorted.iter().find(|&&d| self.slices[d as usize] >= need) {
                return Ok((level, vec![d]));
            }
            if self.required {
                let last = *sorted.last().expect("not empty");
                return Err(self.not_fit(self.pods[last as usize], need));
            }
        }
        if self.slices[top as usize] >= need {
            return Ok((level, vec![top]));
        }
        if self.required {
            return Err(self.not_fit(self.slices[top as usize], need));
        }
        if level > 0 && !self.unconstrained {
            return self.find_level_with_fit(level - 1);
        }
        let mut results = Vec::new();
        let mut remaining = need;
        for i in 0..sorted.len() {
            if remaining <= 0 {
                break;
            }
            let mut d = sorted[i];
            if !self.least_free && self.slices[d as usize] >= remaining {
                d = self.best_fit(&sorted[i..], remaining, true);
            }
            results.push(d);
            remaining -= self.slices[d as usize];
        }
        if remaining > 0 {
            return Err(self.not_fit(need - remaining, need));
        }
        Ok((level, results))
    }

    /// Kueue's `updateCountsToMinimumGeneric` without leaders.
    fn update_counts_to_minimum(
        &mut self,
        ds: &[DomainId],
        count: i32,
        slice_size: i32,
        slices: bool,
    ) -> Result<Vec<DomainId>, String> {
        let mut result = Vec::new();
        let mut remaining = if slices { count / slice_size } else { count };
        for i in 0..ds.len() {
            let mut d = ds[i];
            if !self.least_free && self.count_of(d, slices) >= remaining {
                d = self.best_fit(&ds[i..], remaining, slices);
            }
            let h = self.count_of(d, slices);
            let at = d as usize;
            if h >= remaining {
                if slices {
                    self.pods[at] = remaining * slice_size;
                    self.slices[at] = remaining;
                } else {
                    self.pods[at] = remaining;
                }
                result.push(d);
                return Ok(result);
            }
            if slices {
                self.pods[at] = h * slice_size;
            }
            remaining -= h;
            result.push(d);
        }
        Err(format!(
            "topology {:?}: {remaining} pod(s) or slice(s) left unplaced",
            self.topology()
        ))
    }

    fn run(mut self) -> Result<Vec<LeafPods>, String> {
        let level = self.req.constraint.level as usize;
        self.fill_in_counts();
        let (fit_level, fit) = self.find_level_with_fit(level)?;
        let (count, slice_size) = (self.count, self.slice_size);
        let mut current = self.update_counts_to_minimum(&fit, count, slice_size, true)?;
        let lowest = self.tree.lowest();
        let mut level = fit_level;
        // Above the slice level: all chosen domains' children together, greedily.
        while level < lowest.min(self.slice_level) {
            let lower: Vec<DomainId> = current
                .iter()
                .flat_map(|&d| self.tree.children(d).iter().copied())
                .collect();
            let sorted = self.sorted(lower);
            current = self.update_counts_to_minimum(&sorted, count, slice_size, true)?;
            level += 1;
        }
        // At or below the slice level: each domain's pods among its own children.
        while level < lowest {
            let mut next = Vec::new();
            for d in current {
                let sorted = self.sorted(self.tree.children(d).to_vec());
                let pods = self.pods[d as usize];
                next.extend(self.update_counts_to_minimum(&sorted, pods, 1, false)?);
            }
            current = next;
            level += 1;
        }
        current.sort_unstable();
        Ok(current
            .into_iter()
            .filter(|&d| self.pods[d as usize] > 0)
            .filter_map(|d| {
                self.tree.leaf_of(d).map(|leaf| LeafPods {
                    leaf,
                    count: self.pods[d as usize] as u32,
                })
            })
            .collect())
    }
}
