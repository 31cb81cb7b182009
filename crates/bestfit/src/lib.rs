//! Kueue's default topology placement (`findTopologyAssignment` in
//! `pkg/cache/scheduler/tas_flavor_snapshot.go`), written once for wasq's host (its built-in
//! placement) and for its plugin SDK (`kueue::place`, the `kueue-default-placement` plugin), so
//! that the two decide alike by construction.
//!
//! BestFit by domain: the tightest domain of the requested level that holds every pod (or
//! slice), then level by level down to the leaves the tightest fit again. A preferred level
//! falls back to the levels above, then spans the fewest domains; unconstrained requests take
//! the least free capacity first (Kueue's `TASProfileMixed`, on by default); slices stay whole
//! within their domain, further slice layers within theirs (multi-layer slices); a podSet
//! group's leader is placed with its workers. Not translated: balanced placement and preferred
//! node affinity (Kueue alpha, off by default).
//!
//! The caller describes its tree and free capacity through [`Question`]; domains are indices
//! numbered so that the domains of one level are in the order of their label values (how Kueue
//! breaks ties between domains), leaves likewise.

/// Kueue's limit on a Topology's levels.
pub const MAX_LEVELS: usize = 16;

/// What a podSet asks of a topology, resolved against its levels (0 = the highest).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Constraint {
    /// The level all pods should share a domain of (required) or start from (preferred).
    pub level: usize,
    pub required: bool,
    /// Any domains will do (least free capacity first).
    pub unconstrained: bool,
    /// Slices of `slice_size` pods each stay within one domain of `slice_level`.
    pub slice_level: usize,
    pub slice_size: i32,
    /// Multi-layer slices (Kueue's further `podsetSliceRequiredTopologyConstraints` layers,
    /// `sliceSizeAtLevel`): per level below `slice_level`, the size every domain's pods are a
    /// multiple of (0: none).
    pub inner: [i32; MAX_LEVELS],
    /// The levels the inner layers name (bit per level), for Kueue's multi-layer message.
    pub inner_layers: u32,
}

impl Constraint {
    /// Whether the request has more than one slice layer.
    pub fn multi_layer(&self) -> bool {
        self.inner_layers != 0
    }

    /// The slice layers, outermost first: (level, size).
    pub fn layers(&self) -> Vec<(usize, i32)> {
        let mut out = vec![(self.slice_level, self.slice_size)];
        out.extend(
            (0..MAX_LEVELS)
                .filter(|&l| self.inner_layers & (1 << l) != 0)
                .map(|l| (l, self.inner[l])),
        );
        out
    }

    /// The constraint with further slice layers `(level, size)`, outermost first: each
    /// layer's size applies from the level below the previous layer down to its own (Kueue's
    /// `buildSliceSizeAtLevel`). Layers at or above the previous one, or beyond
    /// [`MAX_LEVELS`], are ignored.
    pub fn with_layers(mut self, layers: impl IntoIterator<Item = (usize, i32)>) -> Constraint {
        let mut prev = self.slice_level;
        for (level, size) in layers {
            if level <= prev || level >= MAX_LEVELS {
                continue;
            }
            for s in &mut self.inner[prev + 1..=level] {
                *s = size;
            }
            self.inner_layers |= 1 << level;
            prev = level;
        }
        self
    }
}

/// An answer: pods per leaf (leaf index, count), leaves in index order; with a leader in the
/// request, the leaf of the leader.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Placement {
    pub leaves: Vec<(usize, i32)>,
    pub leader: Option<usize>,
}

/// One placement question, as the caller keeps it: the domain tree, each leaf's free capacity
/// for the podSet's pods, and what the podSet asks.
pub trait Question {
    /// How many levels the topology has.
    fn levels(&self) -> usize;
    /// How many domains the tree has.
    fn domains(&self) -> usize;
    /// A domain's level.
    fn level(&self, d: usize) -> usize;
    /// A domain's children, in the order of their values.
    fn children(&self, d: usize) -> impl Iterator<Item = usize> + '_;
    /// The domains of a level, in the order of their values.
    fn at_level(&self, level: usize) -> impl Iterator<Item = usize> + '_;
    /// How many leaves the tree has.
    fn leaves(&self) -> usize;
    /// A leaf's domain (a domain of the lowest level).
    fn leaf_domain(&self, leaf: usize) -> usize;
    /// The leaf a lowest-level domain is.
    fn leaf_of(&self, d: usize) -> Option<usize>;
    /// Whether the pods may run on a leaf.
    fn eligible(&self, leaf: usize) -> bool;
    /// How many of the podSet's pods fit on a leaf's free capacity.
    fn pods_fitting(&self, leaf: usize) -> i32;
    /// With a leader: `None` when the leader does not fit on the leaf, else how many pods fit
    /// next to it. `None` without a leader.
    fn pods_fitting_with_leader(&self, leaf: usize) -> Option<i32>;
    /// Whether the podSet group's leader (one pod) is placed with the pods.
    fn has_leader(&self) -> bool;
    /// Pods to place.
    fn count(&self) -> i32;
    fn constraint(&self) -> Constraint;
    /// The Topology's name, as Kueue's messages name it.
    fn topology(&self) -> &str;
    /// A level's node label.
    fn level_name(&self, level: usize) -> &str;
    /// Kueue's count of the leaves left out (`Total nodes: N; excluded: ...`), appended to the
    /// "does not fit" messages; `None` when the caller appends it itself or there is none.
    fn exclusions(&self) -> Option<String> {
        None
    }
}

/// Kueue's placement of `q`, or why it does not fit (Kueue's words).
pub fn place<Q: Question>(q: &Q) -> Result<Placement, String> {
    Search::new(q).run()
}

/// Kueue's per-domain state during one search: pods and slices that fit (then: assigned),
/// and with a leader (podSet group): whether it fits (`leaders`, then: placed there) and the
/// pods and slices that fit next to it (`*_with_leader`). Without a leader, the `*_with_leader`
/// counts equal the plain ones and every step is Kueue's leaderless one.
struct Search<'q, Q> {
    q: &'q Q,
    c: Constraint,
    /// Per domain.
    d: Vec<State>,
    /// 1 with a leader, else 0 (Kueue's `state.leaderCount`).
    leader_count: i32,
}

/// One domain's counts during a search (kept together: one allocation per search).
#[derive(Debug, Clone, Copy, Default)]
struct State {
    pods: i32,
    slices: i32,
    leaders: i32,
    pods_with_leader: i32,
    slices_with_leader: i32,
}

impl<'q, Q: Question> Search<'q, Q> {
    fn new(q: &'q Q) -> Self {
        let n = q.domains();
        Search {
            q,
            c: q.constraint(),
            d: vec![State::default(); n],
            leader_count: i32::from(q.has_leader()),
        }
    }

    fn least_free(&self) -> bool {
        self.c.unconstrained
    }

    /// Phase 1 (Kueue's `fillInCounts` / `fillLeafCounts`).
    fn fill_in_counts(&mut self) {
        for leaf in 0..self.q.leaves() {
            if !self.q.eligible(leaf) {
                continue;
            }
            let d = self.q.leaf_domain(leaf);
            let n = self.q.pods_fitting(leaf);
            self.d[d].pods = n;
            self.d[d].pods_with_leader = n;
            if let Some(workers) = self.q.pods_fitting_with_leader(leaf) {
                self.d[d].leaders = 1;
                self.d[d].pods_with_leader = workers;
            }
        }
        let roots: Vec<usize> = self.q.at_level(0).collect();
        for root in roots {
            self.fill_helper(root);
        }
    }

    /// Kueue's `fillInCountsHelper`: a parent holds its children's pods and slices; with a
    /// leader, as many as fit once the leader takes the cheapest place among children that
    /// can hold it.
    fn fill_helper(&mut self, i: usize) {
        let c = self.c;
        let q = self.q;
        let level = q.level(i);
        if q.children(i).next().is_none() {
            if level == c.slice_level {
                self.d[i].slices = self.d[i].pods / c.slice_size;
                self.d[i].slices_with_leader = self.d[i].pods_with_leader / c.slice_size;
            }
            return;
        }
        let leader_required = self.leader_count > 0;
        let (mut pods, mut slices, mut leaders) = (0i32, 0i32, 0i32);
        let (mut contributor, mut min_pod_diff, mut min_slice_diff) = (false, i32::MAX, i32::MAX);
        // Children at a level with an inner layer give whole inner slices only.
        let inner = c.inner.get(level + 1).copied().unwrap_or(0).max(1);
        for k in q.children(i) {
            self.fill_helper(k);
            let (child_pods, child_pods_with_leader) = (
                self.d[k].pods / inner * inner,
                self.d[k].pods_with_leader / inner * inner,
            );
            pods = pods.saturating_add(child_pods);
            slices = slices.saturating_add(self.d[k].slices);
            if !leader_required || self.d[k].leaders > 0 {
                contributor = true;
                min_pod_diff = min_pod_diff.min(child_pods - child_pods_with_leader);
                min_slice_diff =
                    min_slice_diff.min(self.d[k].slices - self.d[k].slices_with_leader);
            }
            leaders = leaders.max(self.d[k].leaders);
        }
        self.d[i].pods = pods;
        let mut slices_with_leader = 0;
        if contributor {
            self.d[i].pods_with_leader = pods - min_pod_diff;
            slices_with_leader = slices - min_slice_diff;
        } else {
            self.d[i].pods_with_leader = 0;
        }
        self.d[i].leaders = leaders;
        if level == c.slice_level {
            slices = self.d[i].pods / c.slice_size;
            slices_with_leader = self.d[i].pods_with_leader / c.slice_size;
        }
        self.d[i].slices = slices;
        self.d[i].slices_with_leader = slices_with_leader;
    }

    /// Kueue's `sortedDomains`: slices (descending for BestFit, ascending for least free
    /// capacity), then pods ascending, then level values (index order).
    fn sorted(&self, mut ds: Vec<usize>) -> Vec<usize> {
        let least = self.least_free();
        ds.sort_by(|&a, &b| {
            let (sa, sb) = (self.d[a].slices, self.d[b].slices);
            let by_slices = if least { sa.cmp(&sb) } else { sb.cmp(&sa) };
            by_slices
                .then(self.d[a].pods.cmp(&self.d[b].pods))
                .then(a.cmp(&b))
        });
        ds
    }

    /// Kueue's `sortedDomainsWithLeader`: domains that hold the leader first, then as
    /// [`Search::sorted`] by the counts next to a leader (the same counts without one).
    fn sorted_with_leader(&self, mut ds: Vec<usize>) -> Vec<usize> {
        let least = self.least_free();
        ds.sort_by(|&a, &b| {
            let (sa, sb) = (self.d[a].slices_with_leader, self.d[b].slices_with_leader);
            let by_slices = if least { sa.cmp(&sb) } else { sb.cmp(&sa) };
            self.d[b]
                .leaders
                .cmp(&self.d[a].leaders)
                .then(by_slices)
                .then(self.d[a].pods_with_leader.cmp(&self.d[b].pods_with_leader))
                .then(a.cmp(&b))
        });
        ds
    }

    /// A domain's slices (`slices`) or pods, next to `leaders` leaders when there are any.
    fn count(&self, i: usize, slices: bool, leaders: i32) -> i32 {
        match (slices, leaders > 0) {
            (true, false) => self.d[i].slices,
            (true, true) => self.d[i].slices_with_leader,
            (false, false) => self.d[i].pods,
            (false, true) => self.d[i].pods_with_leader,
        }
    }

    /// Kueue's `findBestFitDomainBy`: the first domain with the smallest count that still
    /// holds `needed` (and the `leaders` left); the first domain when none does.
    fn best_fit(&self, ds: &[usize], needed: i32, slices: bool, leaders: i32) -> usize {
        let mut best = None;
        for &d in ds {
            if self.d[d].leaders < leaders {
                continue;
            }
            let c = self.count(d, slices, leaders);
            if c >= needed && best.is_none_or(|(_, b)| c < b) {
                best = Some((d, c));
            }
        }
        best.map_or(ds[0], |(d, _)| d)
    }

    /// Kueue's exclusion counts after a "does not fit" message.
    fn with_exclusions(&self, mut m: String) -> String {
        if let Some(e) = self.q.exclusions() {
            m.push_str(". ");
            m.push_str(&e);
        }
        m
    }

    fn not_fit(&self, fit: i32, total: i32) -> String {
        let unit = if self.c.slice_size == 1 {
            "pod"
        } else {
            "slice"
        };
        let topology = self.q.topology();
        self.with_exclusions(if fit == 0 {
            format!("topology {topology:?} doesn't allow to fit any of {total} {unit}(s)")
        } else {
            format!("topology {topology:?} allows to fit only {fit} out of {total} {unit}(s)")
        })
    }

    /// Kueue's `multiLayerNotFitMessage`: per slice layer, how many slices fit in the domain of
    /// `level` with the most slices.
    fn multi_layer_not_fit(&self, level: usize) -> String {
        let mut m = format!("topology {:?} doesn't allow to fit", self.q.topology());
        let best = self
            .q
            .at_level(level)
            .min_by(|&a, &b| self.d[b].slices.cmp(&self.d[a].slices).then(a.cmp(&b)));
        let Some(best) = best else {
            return m;
        };
        for (target, size) in self.c.layers() {
            let fit = self.slices_in_subtree(best, target, size);
            let needed = self.q.count() / size;
            m.push_str(&format!(
                "; {fit}/{needed} slice(s) fit on level {}",
                self.q.level_name(target)
            ));
        }
        self.with_exclusions(m)
    }

    /// Kueue's `countSlicesInSubtree`: whole slices of `size` in `d`'s domains at `target`.
    fn slices_in_subtree(&self, d: usize, target: usize, size: i32) -> i32 {
        if self.q.level(d) == target {
            return self.d[d].pods / size;
        }
        self.q
            .children(d)
            .map(|k| self.slices_in_subtree(k, target, size))
            .sum()
    }

    /// Phase 2a (Kueue's `findLevelWithFitDomains`).
    fn find_level_with_fit(&self, level: usize) -> Result<(usize, Vec<usize>), String> {
        let c = self.c;
        let lc = self.leader_count;
        let not_fit = |fit: i32, total: i32| {
            if c.multi_layer() {
                self.multi_layer_not_fit(level)
            } else {
                self.not_fit(fit, total)
            }
        };
        let domains: Vec<usize> = self.q.at_level(level).collect();
        if domains.is_empty() {
            return Err(format!(
                "no topology domains at level: {}",
                self.q.level_name(level)
            ));
        }
        let mut sorted = self.sorted_with_leader(domains);
        let need = self.q.count() / c.slice_size;
        let mut top = sorted[0];
        let holds = |s: &Self, d: usize| s.d[d].slices_with_leader >= need && s.d[d].leaders >= lc;
        if !self.least_free() && holds(self, top) {
            top = self.best_fit(&sorted, need, true, lc);
        }
        if self.least_free() {
            let found = sorted.iter().find(|&&d| {
                if lc > 0 {
                    self.d[d].leaders >= lc && self.d[d].slices_with_leader >= need
                } else {
                    self.d[d].slices >= need
                }
            });
            if let Some(&d) = found {
                return Ok((level, vec![d]));
            }
            if c.required {
                let last = *sorted.last().expect("not empty");
                return Err(not_fit(self.d[last].pods, need));
            }
        }
        if holds(self, top) {
            return Ok((level, vec![top]));
        }
        if c.required {
            return Err(not_fit(self.d[top].slices, need));
        }
        if level > 0 && !c.unconstrained {
            return self.find_level_with_fit(level - 1);
        }
        let mut results = Vec::new();
        let mut remaining = need;
        let mut remaining_leaders = lc;
        sorted = self.prioritize_leader_domain(sorted, self.q.count(), lc, c.slice_size, true);
        // Leaders first, from a domain that keeps the workers' capacity.
        let mut idx = 0;
        while remaining_leaders > 0 && idx < sorted.len() && self.d[sorted[idx]].leaders > 0 {
            let mut d = sorted[idx];
            if !self.least_free() && self.d[d].slices_with_leader >= remaining {
                d = self.best_fit(&sorted[idx..], remaining, true, remaining_leaders);
            }
            results.push(d);
            remaining_leaders -= self.d[d].leaders;
            remaining -= self.d[d].slices_with_leader;
            idx += 1;
        }
        if remaining_leaders > 0 {
            return Err(not_fit(lc - remaining_leaders, need));
        }
        let rest = self.sorted(sorted[idx..].to_vec());
        for i in 0..rest.len() {
            if remaining <= 0 {
                break;
            }
            let mut d = rest[i];
            if !self.least_free() && self.d[d].slices >= remaining {
                d = self.best_fit(&rest[i..], remaining, true, 0);
            }
            results.push(d);
            remaining -= self.d[d].slices;
        }
        if remaining > 0 {
            return Err(not_fit(need - remaining, need));
        }
        Ok((level, results))
    }

    /// Kueue's `prioritizeLeaderDomain`: the first domain that holds the leader and whose
    /// leader penalty the others' capacity absorbs goes first.
    fn prioritize_leader_domain(
        &self,
        ds: Vec<usize>,
        count: i32,
        leaders: i32,
        slice_size: i32,
        slices: bool,
    ) -> Vec<usize> {
        if leaders == 0 || ds.len() < 2 {
            return ds;
        }
        let required = if slices { count / slice_size } else { count };
        let available: i32 = ds.iter().map(|&d| self.count(d, slices, 0)).sum();
        for (i, &d) in ds.iter().enumerate() {
            if self.d[d].leaders < leaders {
                continue;
            }
            let penalty = self.count(d, slices, 0) - self.count(d, slices, 1);
            if available - penalty < required {
                continue;
            }
            let mut out = ds.clone();
            out[..=i].rotate_right(1);
            return out;
        }
        ds
    }

    /// Kueue's `consumeWithLeadersGeneric`: gives `d` (or the best fit among `rest`) as many
    /// of the remaining units and leaders as fit next to its leader; true when all are given.
    fn consume_with_leaders(
        &mut self,
        d: usize,
        rest: &[usize],
        remaining: &mut i32,
        remaining_leaders: &mut i32,
        slice_size: i32,
        slices: bool,
    ) -> (usize, bool) {
        let mut i = d;
        if !self.least_free()
            && self.count(i, slices, 1) >= *remaining
            && self.d[i].leaders >= *remaining_leaders
        {
            i = self.best_fit(rest, *remaining, slices, *remaining_leaders);
        }
        let factor = if slices { slice_size } else { 1 };
        let with_leader = self.count(i, slices, 1);
        if with_leader >= *remaining && self.d[i].leaders >= *remaining_leaders {
            if slices {
                self.d[i].slices = *remaining;
            }
            self.d[i].leaders = *remaining_leaders;
            self.d[i].pods = *remaining * factor;
            return (i, true);
        }
        let given = with_leader.min(*remaining);
        self.d[i].leaders = self.d[i].leaders.min(*remaining_leaders);
        if slices {
            self.d[i].slices = given;
            self.d[i].slices_with_leader = given;
        } else {
            self.d[i].pods_with_leader = given;
        }
        self.d[i].pods = given * factor;
        *remaining_leaders -= self.d[i].leaders;
        *remaining -= given;
        (i, false)
    }

    /// Kueue's `updateCountsToMinimumGeneric`: take domains in order until `count` pods
    /// (whole slices when `slices`) and `leaders` leaders are covered, the last one the
    /// tightest fit; each chosen domain's counts become what it is given.
    fn update_counts_to_minimum(
        &mut self,
        ds: &[usize],
        count: i32,
        leaders: i32,
        slice_size: i32,
        slices: bool,
    ) -> Result<Vec<usize>, String> {
        let ds = self.prioritize_leader_domain(ds.to_vec(), count, leaders, slice_size, slices);
        let mut result = Vec::new();
        let mut remaining = if slices { count / slice_size } else { count };
        let mut remaining_leaders = leaders;
        for i in 0..ds.len() {
            if remaining_leaders > 0 {
                let (d, done) = self.consume_with_leaders(
                    ds[i],
                    &ds[i..],
                    &mut remaining,
                    &mut remaining_leaders,
                    slice_size,
                    slices,
                );
                result.push(d);
                if done {
                    return Ok(result);
                }
                continue;
            }
            let mut d = ds[i];
            if !self.least_free() && self.count(d, slices, 0) >= remaining {
                d = self.best_fit(&ds[i..], remaining, slices, 0);
            }
            self.d[d].leaders = 0;
            let h = self.count(d, slices, 0);
            if h >= remaining {
                if slices {
                    self.d[d].pods = remaining * slice_size;
                    self.d[d].slices = remaining;
                } else {
                    self.d[d].pods = remaining;
                }
                result.push(d);
                return Ok(result);
            }
            if slices {
                self.d[d].pods = h * slice_size;
            }
            remaining -= h;
            result.push(d);
        }
        Err(format!(
            "topology {:?}: {remaining} pod(s) or slice(s) left unplaced",
            self.q.topology()
        ))
    }

    fn run(mut self) -> Result<Placement, String> {
        let c = self.c;
        let count = self.q.count();
        let lc = self.leader_count;
        if count == 0 && lc == 0 {
            return Ok(Placement::default());
        }
        self.fill_in_counts();
        let (fit_level, fit) = self.find_level_with_fit(c.level)?;
        let mut current = self.update_counts_to_minimum(&fit, count, lc, c.slice_size, true)?;
        let lowest = self.q.levels().saturating_sub(1);
        let mut level = fit_level;
        // Above the slice level: all chosen domains' children together, greedily.
        while level < lowest.min(c.slice_level) {
            let lower: Vec<usize> = current.iter().flat_map(|&d| self.q.children(d)).collect();
            let sorted = self.sorted(lower);
            current = self.update_counts_to_minimum(&sorted, count, lc, c.slice_size, true)?;
            level += 1;
        }
        // At or below the slice level: each domain's pods among its own children, in whole
        // inner slices where a further layer asks for them.
        while level < lowest {
            let size = c.inner.get(level + 1).copied().unwrap_or(0).max(1);
            let mut next = Vec::new();
            for d in current {
                let sorted = self.sorted(self.q.children(d).collect());
                if size > 1 {
                    for &k in &sorted {
                        self.d[k].slices = self.d[k].pods / size;
                        self.d[k].slices_with_leader = self.d[k].pods_with_leader / size;
                    }
                }
                let (pods, leaders) = (self.d[d].pods, self.d[d].leaders);
                next.extend(self.update_counts_to_minimum(
                    &sorted,
                    pods,
                    leaders,
                    size,
                    size > 1,
                )?);
            }
            current = next;
            level += 1;
        }
        current.sort_unstable();
        let leaf = |d: usize| self.q.leaf_of(d).expect("lowest level");
        let leader = (lc > 0)
            .then(|| {
                current
                    .iter()
                    .find(|&&d| self.d[d].leaders > 0)
                    .map(|&d| leaf(d))
            })
            .flatten();
        if lc > 0 && leader.is_none() {
            return Err(format!(
                "topology {:?}: the leader left unplaced",
                self.q.topology()
            ));
        }
        Ok(Placement {
            leaves: current
                .iter()
                .filter(|&&d| self.d[d].pods > 0)
                .map(|&d| (leaf(d), self.d[d].pods))
                .collect(),
            leader,
        })
    }
}
