//! Dispatch plugins (MultiKueue, `wasq:policy@1.1.0`): implement [`DispatchPolicy`] and export
//! it with [`export_dispatch!`](crate::export_dispatch).
//!
//! The host asks which worker clusters get a copy of a workload that reserved quota behind a
//! MultiKueue admission check: when its quota is reserved, when a worker connects or is lost,
//! and when the time an answer asked for comes ([`Answer::retry_after`]). A request carries the
//! workload (names, podSets, labels), every cluster of its MultiKueueConfig in the
//! configuration's order (name, labels, connected or not, the worker's ClusterQueue when the
//! manager sees it, whether the workload has a copy there) and the nominees so far. The answer
//! is the whole list of nominees, as indices into [`Request::clusters`]; the host checks that
//! each is connected, named once, at most 20 of them, and otherwise lets the built-in
//! dispatcher decide.
//!
//! Unlike the other kinds, a dispatch request carries names as plain strings: there is no
//! catalog and no string table. The plugin's settings arrive once per instance
//! ([`DispatchPolicy::settings_changed`]).
//!
//! Kueue's two dispatchers are here to reuse ([`all_at_once`], [`incremental`]), over the
//! whole request or over the clusters a plugin keeps ([`Only`]).

pub use crate::bindings::dispatch::exports::wasq::policy::dispatch::{
    Answer, Cluster, Label, NamedQuantity, PodSet, Request, WorkerQueue, WorkerResource, Workload,
};
pub use wasq_kueue::dispatch::{DEFAULT_STEP, ROUND_MS, Round, Workers};

use crate::types::Setting;

/// A cluster's index in [`Request::clusters`]: what answers name.
pub type ClusterIndex = u32;

/// The plugin's settings (`pluginSettings.<name>` in the wasq configuration, or a
/// QueuePolicy's `settings`), as written there.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settings(Vec<Setting>);

impl Settings {
    /// Settings from `(key, value)` pairs (for tests).
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Settings {
        Settings(
            pairs
                .into_iter()
                .map(|(key, value)| Setting {
                    key: key.into(),
                    value: value.into(),
                })
                .collect(),
        )
    }

    /// The value of setting `key`, if configured.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|s| s.key == key)
            .map(|s| s.value.as_str())
    }

    /// Every setting, in the configuration's order.
    pub fn all(&self) -> &[Setting] {
        &self.0
    }
}

/// A dispatch policy.
///
/// The SDK builds the policy with [`Default`] on the first call into the plugin, hands it its
/// settings, then asks it once per request.
pub trait DispatchPolicy: Default + 'static {
    /// Called with the plugin's settings before its first request (the place to read them).
    /// Default: nothing.
    fn settings_changed(&mut self, settings: &Settings) {
        let _ = settings;
    }

    /// Every nominee (indices into `req.clusters`, each connected, each once, at most 20) and
    /// when to be asked again. [`all_at_once`] and [`incremental`] are Kueue's answers.
    fn dispatch(&mut self, settings: &Settings, req: &Request) -> Answer;
}

impl Request {
    /// The cluster named `name`, by index.
    pub fn cluster(&self, name: &str) -> Option<ClusterIndex> {
        self.clusters
            .iter()
            .position(|c| c.name == name)
            .map(|i| i as ClusterIndex)
    }
}

impl Cluster {
    /// The value of its MultiKueueCluster's label `key`.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|l| l.key == key)
            .map(|l| l.value.as_str())
    }
}

impl Workload {
    /// The value of the Workload's label `key` (if the plugin's allow-list passes it).
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|l| l.key == key)
            .map(|l| l.value.as_str())
    }
}

/// A request's clusters as Kueue's dispatchers read them.
impl Workers for Request {
    fn len(&self) -> usize {
        self.clusters.len()
    }
    fn name(&self, i: u32) -> &str {
        &self.clusters[i as usize].name
    }
    fn connected(&self, i: u32) -> bool {
        self.clusters[i as usize].connected
    }
}

/// A request's clusters with those `keep` refuses taken as not connected: Kueue's dispatchers
/// over part of the clusters, the indices still the request's.
///
/// ```ignore
/// // Kueue's all-at-once, but only to clusters labelled for GPUs.
/// let gpu = Only::new(req, |c| c.label("accelerator") == Some("gpu"));
/// let answer = all_at_once(&gpu);
/// ```
pub struct Only<'r, F> {
    req: &'r Request,
    keep: F,
}

impl<'r, F: Fn(&Cluster) -> bool> Only<'r, F> {
    /// The clusters of `req` that `keep` keeps.
    pub fn new(req: &'r Request, keep: F) -> Only<'r, F> {
        Only { req, keep }
    }
}

impl<F: Fn(&Cluster) -> bool> Workers for Only<'_, F> {
    fn len(&self) -> usize {
        self.req.clusters.len()
    }
    fn name(&self, i: u32) -> &str {
        &self.req.clusters[i as usize].name
    }
    fn connected(&self, i: u32) -> bool {
        let c = &self.req.clusters[i as usize];
        c.connected && (self.keep)(c)
    }
}

/// Kueue's `multikueue-dispatcher-all-at-once`: every connected cluster of `workers`, by name,
/// asked again only when something changes.
pub fn all_at_once<W: Workers + ?Sized>(workers: &W) -> Answer {
    Answer {
        nominate: wasq_kueue::dispatch::all_at_once(workers),
        retry_after: None,
    }
}

/// Kueue's `multikueue-dispatcher-incremental` with `step` clusters per five-minute round
/// ([`DEFAULT_STEP`] is Kueue's 3): the nominees of `req` stay while a round lasts, then the
/// next `step` connected clusters of `workers` not yet nominated, in the configuration's order,
/// are added.
pub fn incremental<W: Workers + ?Sized>(workers: &W, req: &Request, step: u32) -> Answer {
    let round = wasq_kueue::dispatch::incremental(
        workers,
        &req.nominated,
        req.last_nominated,
        req.now,
        step,
        ROUND_MS,
    );
    Answer {
        nominate: round.nominate,
        retry_after: round.retry_after,
    }
}

#[doc(hidden)]
pub mod glue {
    use super::*;

    /// What [`export_dispatch!`](crate::export_dispatch) keeps between calls.
    pub struct Plugin<P> {
        policy: P,
        settings: Settings,
    }

    impl<P: DispatchPolicy> Plugin<P> {
        /// Installs the panic hook and builds the policy.
        pub fn new() -> Plugin<P> {
            crate::log::install_panic_hook();
            Plugin {
                policy: P::default(),
                settings: Settings::default(),
            }
        }

        pub fn set_settings(&mut self, settings: Vec<Setting>) {
            self.settings = Settings(settings);
            self.policy.settings_changed(&self.settings);
        }

        pub fn dispatch(&mut self, requests: Vec<Request>) -> Vec<Answer> {
            requests
                .iter()
                .map(|r| self.policy.dispatch(&self.settings, r))
                .collect()
        }
    }

    impl<P: DispatchPolicy> Default for Plugin<P> {
        fn default() -> Plugin<P> {
            Plugin::new()
        }
    }
}

/// Exports a type implementing [`DispatchPolicy`] as the plugin's `wasq:policy/dispatch`
/// interface. Invoke it once, in the plugin crate's `lib.rs`:
///
/// ```ignore
/// #[derive(Default)]
/// struct MyDispatch;
/// impl wasq_policy_sdk::dispatch::DispatchPolicy for MyDispatch { /* … */ }
/// wasq_policy_sdk::export_dispatch!(MyDispatch);
/// ```
#[macro_export]
macro_rules! export_dispatch {
    ($policy:ty) => {
        const _: () = {
            struct __WasqDispatchExport;
            ::std::thread_local! {
                static __WASQ_PLUGIN: ::core::cell::RefCell<$crate::dispatch::glue::Plugin<$policy>> =
                    ::core::cell::RefCell::new($crate::dispatch::glue::Plugin::new());
            }
            impl $crate::bindings::dispatch::exports::wasq::policy::dispatch::Guest
                for __WasqDispatchExport
            {
                fn set_settings(settings: ::std::vec::Vec<$crate::types::Setting>) {
                    __WASQ_PLUGIN.with_borrow_mut(|p| p.set_settings(settings))
                }
                fn dispatch(
                    requests: ::std::vec::Vec<$crate::dispatch::Request>,
                ) -> ::std::vec::Vec<$crate::dispatch::Answer> {
                    __WASQ_PLUGIN.with_borrow_mut(|p| p.dispatch(requests))
                }
            }
            $crate::bindings::dispatch::__export_dispatch_plugin!(
                __WasqDispatchExport with_types_in $crate::bindings::dispatch
            );
        };
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{dispatch_cluster, dispatch_request};

    #[test]
    fn kueues_dispatchers_over_the_request_and_over_part_of_it() {
        let req = dispatch_request(
            0,
            vec![
                dispatch_cluster("west", true),
                dispatch_cluster("east", true),
                dispatch_cluster("lost", false),
            ],
        );
        assert_eq!(all_at_once(&req).nominate, vec![1, 0]);
        let only_west = Only::new(&req, |c| c.name == "west");
        assert_eq!(all_at_once(&only_west).nominate, vec![0]);
        let first = incremental(&req, &req, 1);
        assert_eq!(first.nominate, vec![0]);
        assert_eq!(first.retry_after, Some(ROUND_MS));
        assert_eq!(req.cluster("east"), Some(1));
    }

    #[test]
    fn settings_are_read_by_key() {
        let s = Settings::from_pairs([("dispatcher", "incremental"), ("stepSize", "2")]);
        assert_eq!(s.get("stepSize"), Some("2"));
        assert_eq!(s.get("missing"), None);
        assert_eq!(s.all().len(), 2);
    }
}
