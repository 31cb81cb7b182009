//! Kueue's MultiKueue dispatchers as a plugin: the exact behaviour of wasq's built-in
//! `AllAtOnce` and `Incremental` (`wasq-kueue`'s `dispatch`, the same code).
//!
//! Settings (`pluginSettings.kueue-default-dispatch`):
//! - `dispatcher`: `all-at-once` (the default: every connected cluster, by name) or
//!   `incremental` (`stepSize` more connected clusters, in the MultiKueueConfig's order, every
//!   five-minute round; earlier nominees are never taken back);
//! - `stepSize`: the incremental dispatcher's clusters per round (default 3, Kueue's).
//!
//! A setting it cannot read is logged and its default kept.

use wasq_policy_sdk::dispatch::{
    Answer, DEFAULT_STEP, DispatchPolicy, Request, Settings, all_at_once, incremental,
};

/// Which of Kueue's dispatchers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KueueDispatch {
    /// `kueue.x-k8s.io/multikueue-dispatcher-all-at-once`.
    #[default]
    AllAtOnce,
    /// `kueue.x-k8s.io/multikueue-dispatcher-incremental`, with its step.
    Incremental { step: u32 },
}

impl DispatchPolicy for KueueDispatch {
    fn settings_changed(&mut self, settings: &Settings) {
        let step = match settings.get("stepSize").map(str::parse::<u32>) {
            None => DEFAULT_STEP,
            Some(Ok(step)) if step > 0 => step,
            Some(_) => {
                wasq_policy_sdk::warn!(
                    "stepSize {:?} is not a positive integer; using {DEFAULT_STEP}",
                    settings.get("stepSize").unwrap_or_default()
                );
                DEFAULT_STEP
            }
        };
        *self = match settings.get("dispatcher") {
            None | Some("all-at-once") => KueueDispatch::AllAtOnce,
            Some("incremental") => KueueDispatch::Incremental { step },
            Some(other) => {
                wasq_policy_sdk::warn!(
                    "dispatcher {other:?} is neither all-at-once nor incremental; using all-at-once"
                );
                KueueDispatch::AllAtOnce
            }
        };
    }

    fn dispatch(&mut self, _: &Settings, req: &Request) -> Answer {
        match *self {
            KueueDispatch::AllAtOnce => all_at_once(req),
            KueueDispatch::Incremental { step } => incremental(req, req, step),
        }
    }
}

wasq_policy_sdk::export_dispatch!(KueueDispatch);

#[cfg(test)]
mod tests {
    use super::*;
    use wasq_policy_sdk::dispatch::ROUND_MS;
    use wasq_policy_sdk::testing::{dispatch_cluster, dispatch_request};

    fn configured(pairs: &[(&str, &str)]) -> KueueDispatch {
        let mut p = KueueDispatch::default();
        p.settings_changed(&Settings::from_pairs(pairs.iter().copied()));
        p
    }

    #[test]
    fn settings_choose_the_dispatcher_and_its_step() {
        assert_eq!(configured(&[]), KueueDispatch::AllAtOnce);
        assert_eq!(
            configured(&[("dispatcher", "incremental")]),
            KueueDispatch::Incremental { step: 3 }
        );
        assert_eq!(
            configured(&[("dispatcher", "incremental"), ("stepSize", "1")]),
            KueueDispatch::Incremental { step: 1 }
        );
        assert_eq!(
            configured(&[("dispatcher", "incremental"), ("stepSize", "0")]),
            KueueDispatch::Incremental { step: 3 }
        );
        assert_eq!(configured(&[("dispatcher", "x")]), KueueDispatch::AllAtOnce);
    }

    #[test]
    fn incremental_adds_a_step_per_round() {
        let mut p = configured(&[("dispatcher", "incremental"), ("stepSize", "1")]);
        let mut req = dispatch_request(
            0,
            vec![
                dispatch_cluster("c", true),
                dispatch_cluster("a", true),
                dispatch_cluster("b", true),
            ],
        );
        let settings = Settings::default();
        let first = p.dispatch(&settings, &req);
        assert_eq!(
            (first.nominate.clone(), first.retry_after),
            (vec![0], Some(ROUND_MS))
        );
        req.nominated = first.nominate;
        req.last_nominated = Some(0);
        req.now = ROUND_MS;
        assert_eq!(p.dispatch(&settings, &req).nominate, vec![0, 1]);
        let mut all = KueueDispatch::AllAtOnce;
        assert_eq!(all.dispatch(&settings, &req).nominate, vec![1, 2, 0]);
    }
}
