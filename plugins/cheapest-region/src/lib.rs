//! MultiKueue dispatch by price: a workload goes to the one connected worker whose flavor is
//! cheapest, unless that worker's queue is already long, when it spills over to the next
//! cheapest; when every worker's queue is long it goes to all of them (Kueue's all-at-once), and
//! the first to admit it runs it.
//!
//! Settings (`pluginSettings.cheapest-region`):
//! - `prices`: `flavor=price` pairs, comma-separated (`a100-us-east=3.20,a100-eu-west=2.10`):
//!   what an hour of `resource` costs on each worker's flavor. A worker costs what its cheapest
//!   priced flavor of `resource` with quota costs; one with no priced flavor, or whose queue the
//!   manager cannot see, comes after every priced one;
//! - `resource`: the resource the prices are for (default `nvidia.com/gpu`);
//! - `spillOver`: a worker with this many workloads pending or more is passed over (default 2).
//!
//! A nominee that is still connected keeps the workload (its copy keeps its place in that
//! worker's queue); the choice is made again only when it is lost. A setting it cannot read is
//! logged and its default kept.

use wasq_policy_sdk::dispatch::{Answer, Cluster, DispatchPolicy, Request, Settings, all_at_once};

const DEFAULT_RESOURCE: &str = "nvidia.com/gpu";
const DEFAULT_SPILL_OVER: u32 = 2;

#[derive(Debug, Clone, PartialEq)]
pub struct CheapestRegion {
    /// (flavor, price per hour).
    prices: Vec<(String, f64)>,
    resource: String,
    spill_over: u32,
}

impl Default for CheapestRegion {
    fn default() -> CheapestRegion {
        CheapestRegion {
            prices: Vec::new(),
            resource: DEFAULT_RESOURCE.into(),
            spill_over: DEFAULT_SPILL_OVER,
        }
    }
}

impl CheapestRegion {
    /// What an hour of the resource costs on `c`: its cheapest priced flavor with quota.
    fn price(&self, c: &Cluster) -> Option<f64> {
        let queue = c.queue.as_ref()?;
        queue
            .resources
            .iter()
            .filter(|r| r.resource == self.resource && r.nominal > 0)
            .filter_map(|r| {
                self.prices
                    .iter()
                    .find(|(f, _)| *f == r.flavor)
                    .map(|&(_, p)| p)
            })
            .min_by(f64::total_cmp)
    }

    fn queue_is_long(&self, c: &Cluster) -> bool {
        c.queue.as_ref().is_some_and(|q| q.pending >= self.spill_over)
    }
}

fn parse_prices(v: &str) -> Result<Vec<(String, f64)>, String> {
    v.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (flavor, price) = p
                .split_once('=')
                .ok_or_else(|| format!("{p:?} is not flavor=price"))?;
            let price: f64 = price
                .trim()
                .parse()
                .map_err(|_| format!("{p:?}: {price:?} is not a number"))?;
            if !price.is_finite() || price < 0.0 {
                return Err(format!("{p:?}: a price is a number of 0 or more"));
            }
            Ok((flavor.trim().to_string(), price))
        })
        .collect()
}

impl DispatchPolicy for CheapestRegion {
    fn settings_changed(&mut self, settings: &Settings) {
        *self = CheapestRegion::default();
        if let Some(v) = settings.get("prices") {
            match parse_prices(v) {
                Ok(prices) => self.prices = prices,
                Err(e) => wasq_policy_sdk::warn!("prices: {e}; no worker is priced"),
            }
        }
        if let Some(r) = settings.get("resource") {
            self.resource = r.to_string();
        }
        if let Some(v) = settings.get("spillOver") {
            match v.trim().parse::<u32>() {
                Ok(n) if n > 0 => self.spill_over = n,
                _ => wasq_policy_sdk::warn!(
                    "spillOver {v:?} is not a positive integer; using {DEFAULT_SPILL_OVER}"
                ),
            }
        }
    }

    fn dispatch(&mut self, _: &Settings, req: &Request) -> Answer {
        // A connected nominee keeps the workload.
        let kept: Vec<u32> = req
            .nominated
            .iter()
            .copied()
            .filter(|&i| req.clusters[i as usize].connected)
            .collect();
        if !kept.is_empty() {
            return Answer {
                nominate: kept,
                retry_after: None,
            };
        }
        // Connected workers, cheapest first (unpriced last, then in the config's order).
        let mut candidates: Vec<(u32, Option<f64>)> = req
            .clusters
            .iter()
            .enumerate()
            .filter(|(_, c)| c.connected)
            .map(|(i, c)| (i as u32, self.price(c)))
            .collect();
        candidates.sort_by(|a, b| match (a.1, b.1) {
            (Some(x), Some(y)) => x.total_cmp(&y),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => std::cmp::Ordering::Equal,
        });
        match candidates
            .iter()
            .find(|(i, _)| !self.queue_is_long(&req.clusters[*i as usize]))
        {
            Some(&(i, _)) => Answer {
                nominate: vec![i],
                retry_after: None,
            },
            // Every queue is long: whoever admits it first.
            None => all_at_once(req),
        }
    }
}

wasq_policy_sdk::export_dispatch!(CheapestRegion);

#[cfg(test)]
mod tests {
    use super::*;
    use wasq_policy_sdk::dispatch::{WorkerQueue, WorkerResource};
    use wasq_policy_sdk::testing::{dispatch_cluster, dispatch_request};

    fn worker(name: &str, flavor: &str, pending: u32) -> Cluster {
        Cluster {
            queue: Some(WorkerQueue {
                name: "gpus".into(),
                pending,
                admitted: 0,
                resources: vec![WorkerResource {
                    flavor: flavor.into(),
                    resource: DEFAULT_RESOURCE.into(),
                    nominal: 8000,
                    usage: 0,
                }],
            }),
            ..dispatch_cluster(name, true)
        }
    }

    fn policy(pairs: &[(&str, &str)]) -> CheapestRegion {
        let mut p = CheapestRegion::default();
        p.settings_changed(&Settings::from_pairs(pairs.iter().copied()));
        p
    }

    fn priced() -> CheapestRegion {
        policy(&[("prices", "a100-east=3.2, a100-west=2.1"), ("spillOver", "2")])
    }

    #[test]
    fn the_cheapest_worker_with_a_short_queue_gets_it() {
        let req = dispatch_request(
            0,
            vec![worker("east", "a100-east", 0), worker("west", "a100-west", 1)],
        );
        assert_eq!(priced().dispatch(&Settings::default(), &req).nominate, [1]);
    }

    #[test]
    fn a_long_queue_spills_over_to_the_next_cheapest_and_all_long_goes_to_all() {
        let spill = dispatch_request(
            0,
            vec![worker("east", "a100-east", 0), worker("west", "a100-west", 2)],
        );
        assert_eq!(priced().dispatch(&Settings::default(), &spill).nominate, [0]);
        let all_long = dispatch_request(
            0,
            vec![worker("east", "a100-east", 5), worker("west", "a100-west", 2)],
        );
        assert_eq!(
            priced().dispatch(&Settings::default(), &all_long).nominate,
            [0, 1]
        );
    }

    #[test]
    fn a_connected_nominee_keeps_it_and_a_lost_one_is_replaced() {
        let mut req = dispatch_request(
            0,
            vec![worker("east", "a100-east", 0), worker("west", "a100-west", 0)],
        );
        req.nominated = vec![0];
        assert_eq!(priced().dispatch(&Settings::default(), &req).nominate, [0]);
        req.clusters[0].connected = false;
        assert_eq!(priced().dispatch(&Settings::default(), &req).nominate, [1]);
    }

    #[test]
    fn unpriced_or_unseen_workers_come_last_and_bad_settings_keep_defaults() {
        let mut unseen = worker("seen-not", "a100-west", 0);
        unseen.queue = None;
        let req = dispatch_request(
            0,
            vec![unseen, worker("other", "t4", 0), worker("west", "a100-west", 0)],
        );
        assert_eq!(priced().dispatch(&Settings::default(), &req).nominate, [2]);
        let p = policy(&[("prices", "a100=cheap"), ("spillOver", "0")]);
        assert_eq!(p.prices, []);
        assert_eq!(p.spill_over, DEFAULT_SPILL_OVER);
        assert!(parse_prices("x=1,y").unwrap_err().contains("flavor=price"));
        assert!(parse_prices("x=-1").unwrap_err().contains("0 or more"));
    }
}
