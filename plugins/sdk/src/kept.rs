//! The quota usage a preemption instance keeps between requests (`request.usage-kept` in
//! `wit/preemption.wit`): the host sends each node's usage once, and again only when it
//! changed, so what a request does not carry the instance received earlier and finds here.
//!
//! The glue files every request's `usage` here as it receives it, before the plugin sees the
//! request (a plugin that answers without reading usage must not lose it for the requests
//! after it). A [`QuotaView`](crate::QuotaView) of such a request reads its usage from here:
//! its [`Layout`](crate::layout::Layout) holds every node received, kept from view to view and
//! brought up to date from the nodes that arrived since ([`KeptUsage::arrived_since`]).

use std::cell::RefCell;

use crate::catalog::Catalog;
use crate::types::{FrAmount, FrId, NodeId, NodeUsage, Quantity};

/// Past this many arrivals not yet read by every layout, the oldest are forgotten: a layout
/// that had not read them reads every node again.
const LOG_LIMIT: usize = 1 << 14;

/// The usage received, by node and flavor-resource of the catalog.
#[derive(Debug, Default)]
pub(crate) struct KeptUsage {
    /// The catalog it is laid out for ([`Catalog::serial`]).
    serial: u64,
    /// Flavor-resources of the catalog: a node's entries are `node * width ..`.
    width: usize,
    /// The usage received last (0 where none was).
    values: Vec<Quantity>,
    /// Every node whose usage arrived, once each, and by node whether it is listed.
    nodes: Vec<NodeId>,
    listed: Vec<bool>,
    /// The nodes whose usage arrived, in order: arrival `first + k` is `log[k]`.
    log: Vec<NodeId>,
    first: usize,
}

thread_local! {
    static KEPT: RefCell<KeptUsage> = RefCell::new(KeptUsage::default());
}

/// Files a request's `usage`: each entry is its node's whole usage of the request's
/// flavor-resources (`requests`; one the entry does not list is 0), replacing what was kept
/// for them. A new catalog drops what was kept first. Unknown nodes and flavor-resources are
/// skipped.
pub(crate) fn receive(catalog: &Catalog, usage: &[NodeUsage], requests: &[FrAmount]) {
    KEPT.with_borrow_mut(|k| k.receive(catalog, usage, requests));
}

/// Runs `f` on what is kept for `catalog` (nothing, for another catalog).
pub(crate) fn with<R>(catalog: &Catalog, f: impl FnOnce(&KeptUsage) -> R) -> R {
    KEPT.with_borrow_mut(|k| {
        k.lay_out(catalog);
        f(k)
    })
}

/// Runs `f` on what is kept, whichever catalog it is laid out for.
pub(crate) fn with_current<R>(f: impl FnOnce(&KeptUsage) -> R) -> R {
    KEPT.with_borrow(f)
}

impl KeptUsage {
    /// Starts again (holding nothing) unless laid out for `catalog`.
    fn lay_out(&mut self, catalog: &Catalog) {
        let width = catalog.flavor_resources.len();
        let len = catalog.nodes.len() * width;
        if self.serial != catalog.serial() || self.values.len() != len || self.width != width {
            *self = KeptUsage {
                serial: catalog.serial(),
                width,
                values: vec![0; len],
                nodes: Vec::new(),
                listed: vec![false; catalog.nodes.len()],
                log: Vec::new(),
                first: 0,
            };
        }
    }

    fn receive(&mut self, catalog: &Catalog, usage: &[NodeUsage], requests: &[FrAmount]) {
        self.lay_out(catalog);
        if self.log.len() + usage.len() > LOG_LIMIT {
            self.first += self.log.len();
            self.log.clear();
        }
        let width = self.width;
        for entry in usage {
            let n = entry.node as usize;
            if n >= self.listed.len() {
                continue;
            }
            let values = &mut self.values[n * width..(n + 1) * width];
            for r in requests {
                if let Some(v) = values.get_mut(r.fr as usize) {
                    *v = 0;
                }
            }
            for u in &entry.usage {
                if let Some(v) = values.get_mut(u.fr as usize) {
                    *v = u.amount;
                }
            }
            if !self.listed[n] {
                self.listed[n] = true;
                self.nodes.push(entry.node);
            }
            self.log.push(entry.node);
        }
    }

    /// The node's usage of `fr` as received last; 0 when none was.
    #[inline]
    pub(crate) fn get(&self, node: NodeId, fr: FrId) -> Quantity {
        if fr as usize >= self.width {
            return 0;
        }
        let at = (node as usize)
            .saturating_mul(self.width)
            .saturating_add(fr as usize);
        self.values.get(at).copied().unwrap_or(0)
    }

    /// How many nodes' usage has arrived (the number of the next arrival).
    pub(crate) fn arrivals(&self) -> usize {
        self.first + self.log.len()
    }

    /// The nodes whose usage arrived from arrival `since` on, in order; `None` when some of
    /// them are forgotten (then every node received may have changed: [`nodes`]).
    ///
    /// [`nodes`]: KeptUsage::nodes
    pub(crate) fn arrived_since(&self, since: usize) -> Option<&[NodeId]> {
        self.log.get(since.checked_sub(self.first)?..)
    }

    /// Every node whose usage arrived.
    pub(crate) fn nodes(&self) -> &[NodeId] {
        &self.nodes
    }

    /// Which catalog it is laid out for.
    pub(crate) fn serial(&self) -> u64 {
        self.serial
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{CatalogBuilder, amounts, node_usage};

    /// An entry is its node's whole usage of the request's flavor-resources: one it does not
    /// list is 0 from then on; other flavor-resources and nodes keep what they had.
    #[test]
    fn an_entry_replaces_its_nodes_usage_of_the_requests_flavor_resources() {
        let cat = CatalogBuilder::new()
            .flavor_resources(3)
            .cohort("c", None)
            .cluster_queue("a", Some(0))
            .build();
        let mut k = KeptUsage::default();
        let all = amounts(&[(0, 1), (1, 1), (2, 1)]);
        k.receive(&cat, &[node_usage(1, &[(0, 5), (1, 6), (2, 7)])], &all);
        k.receive(&cat, &[node_usage(0, &[(0, 9)])], &all);
        assert_eq!((k.get(1, 0), k.get(1, 1), k.get(1, 2)), (5, 6, 7));
        // A request for flavor-resources 0 and 1 lists node 1 with only 1: 0 is now 0, 2 is
        // not the request's and stays.
        k.receive(
            &cat,
            &[node_usage(1, &[(1, 3)])],
            &amounts(&[(0, 1), (1, 1)]),
        );
        assert_eq!((k.get(1, 0), k.get(1, 1), k.get(1, 2)), (0, 3, 7));
        assert_eq!(k.get(0, 0), 9);
        // Unknown nodes and flavor-resources are skipped.
        k.receive(
            &cat,
            &[node_usage(7, &[(0, 1)]), node_usage(1, &[(9, 1)])],
            &all,
        );
        assert_eq!((k.get(7, 0), k.get(1, 9)), (0, 0));
        assert_eq!((k.nodes(), k.arrivals()), (&[1, 0][..], 4));
    }
}
