//! MultiKueue's built-in dispatchers (`pkg/controller/admissionchecks/multikueue/workload.go`
//! and `pkg/controller/workloaddispatcher/incrementaldispatcher.go`): which worker clusters a
//! workload that reserved quota behind a MultiKueue admission check is copied to, as
//! `status.nominatedClusterNames`.
//!
//! Both read the workload's clusters through [`Workers`] (in its MultiKueueConfig's order) and
//! answer the whole list of nominees, as indices into it. Where wasq differs from Kueue: the
//! incremental dispatcher nominates only connected clusters (Kueue's nominates any configured
//! cluster, and its MultiKueue controller then reports the unconnected ones as errors), so
//! every answer passes the host's check that nominees are connected.

/// A workload's candidate worker clusters, by index.
pub trait Workers {
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The cluster's name (its MultiKueueCluster's).
    fn name(&self, i: u32) -> &str;
    /// The manager has a working connection to it.
    fn connected(&self, i: u32) -> bool;
}

/// Kueue's incremental dispatcher: nominees added per round (`stepSize`, default 3).
pub const DEFAULT_STEP: u32 = 3;
/// Kueue's `incrementalDispatcherRoundTimeout`: a round lasts 5 minutes.
pub const ROUND_MS: i64 = 5 * 60 * 1000;

/// `kueue.x-k8s.io/multikueue-dispatcher-all-at-once`: every connected cluster, by name.
pub fn all_at_once<W: Workers + ?Sized>(workers: &W) -> Vec<u32> {
    let mut out: Vec<u32> = (0..workers.len() as u32)
        .filter(|&i| workers.connected(i))
        .collect();
    out.sort_by(|&a, &b| workers.name(a).cmp(workers.name(b)));
    out
}

/// What the incremental dispatcher answers: the nominees, and when to ask again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Round {
    pub nominate: Vec<u32>,
    /// Milliseconds until the next round; `None` when every cluster is nominated.
    pub retry_after: Option<i64>,
}

/// `kueue.x-k8s.io/multikueue-dispatcher-incremental`: while a round lasts (`round_ms` after
/// `last_round`), the nominees stay; then the next `step` connected clusters not yet nominated,
/// in the configuration's order, are added (earlier nominees are never taken back).
pub fn incremental<W: Workers + ?Sized>(
    workers: &W,
    nominated: &[u32],
    last_round: Option<i64>,
    now: i64,
    step: u32,
    round_ms: i64,
) -> Round {
    if let Some(started) = last_round {
        let left = started.saturating_add(round_ms) - now;
        if left > 0 {
            return Round {
                nominate: nominated.to_vec(),
                retry_after: Some(left),
            };
        }
    }
    let batch: Vec<u32> = (0..workers.len() as u32)
        .filter(|i| !nominated.contains(i) && workers.connected(*i))
        .take(step.max(1) as usize)
        .collect();
    if batch.is_empty() {
        // Nothing left to add now; a cluster that connects later is asked about then.
        return Round {
            nominate: nominated.to_vec(),
            retry_after: None,
        };
    }
    let mut nominate = nominated.to_vec();
    nominate.extend(batch);
    let more = (0..workers.len() as u32).any(|i| !nominate.contains(&i));
    Round {
        nominate,
        retry_after: more.then_some(round_ms),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct W(Vec<(&'static str, bool)>);

    impl Workers for W {
        fn len(&self) -> usize {
            self.0.len()
        }
        fn name(&self, i: u32) -> &str {
            self.0[i as usize].0
        }
        fn connected(&self, i: u32) -> bool {
            self.0[i as usize].1
        }
    }

    #[test]
    fn all_at_once_nominates_every_connected_cluster_by_name() {
        let w = W(vec![("west", true), ("east", true), ("lost", false)]);
        assert_eq!(all_at_once(&w), vec![1, 0]);
    }

    #[test]
    fn incremental_adds_a_batch_per_round_in_config_order_and_never_revokes() {
        let w = W(vec![("c", true), ("a", true), ("b", false), ("d", true)]);
        // First round: the first two connected clusters in the configuration's order.
        let r = incremental(&w, &[], None, 0, 2, ROUND_MS);
        assert_eq!(
            r,
            Round {
                nominate: vec![0, 1],
                retry_after: Some(ROUND_MS)
            }
        );
        // Within the round: unchanged, asked again when it ends.
        let r = incremental(&w, &[0, 1], Some(0), 60_000, 2, ROUND_MS);
        assert_eq!(
            r,
            Round {
                nominate: vec![0, 1],
                retry_after: Some(ROUND_MS - 60_000)
            }
        );
        // Next round: the one connected cluster left (b is not connected).
        let r = incremental(&w, &[0, 1], Some(0), ROUND_MS, 2, ROUND_MS);
        assert_eq!(
            r,
            Round {
                nominate: vec![0, 1, 3],
                retry_after: Some(ROUND_MS)
            }
        );
        // Only an unconnected one is left: nothing to add, nothing to wait for.
        let r = incremental(&w, &[0, 1, 3], Some(ROUND_MS), 2 * ROUND_MS, 2, ROUND_MS);
        assert_eq!(
            r,
            Round {
                nominate: vec![0, 1, 3],
                retry_after: None
            }
        );
    }

    #[test]
    fn incremental_with_every_cluster_nominated_stops_asking() {
        let w = W(vec![("a", true)]);
        let r = incremental(&w, &[], None, 0, DEFAULT_STEP, ROUND_MS);
        assert_eq!(
            r,
            Round {
                nominate: vec![0],
                retry_after: None
            }
        );
    }
}
