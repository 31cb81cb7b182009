//! One worker's connection state, as Kueue's `remoteClient` keeps it
//! (`multikueuecluster.go` at HEAD: `connectionState`, `failedConnAttempts`,
//! `retryConnNextAttempt`, `updateConfigAndRefreshWatchers`), and the MultiKueueCluster
//! `Active` condition it implies (`clustersReconciler.Reconcile` and `updateStatus`).
//!
//! Pure: the caller passes the time (the controller's clock) and runs the sessions (a list,
//! then watches, of the worker). A session is numbered by a generation; the outcome of a
//! session that is no longer the current one is ignored.
//!
//! - A config is loaded ([`Connection::loaded`]): if its digest changed, the session is
//!   dropped and the failed attempts reset, then a new session starts at once. With the same
//!   digest, a session starts when none runs, the worker is not connected and the backoff has
//!   passed ([`Decision::Defer`] otherwise).
//! - The session lists and watches ([`Connection::synced`]): connected, attempts reset, no
//!   longer lost.
//! - The session ends ([`Connection::ended`]): before it synced, a failed attempt, retried
//!   after [`retry_after`]; after, a dropped watch, retried at once (Kueue's "watch ended"
//!   requeue). Either way the worker is lost since the first drop (`disconnected_since`).
//! - The config cannot be loaded ([`Connection::load_failed`]): the session is dropped and the
//!   worker disconnected (HEAD's `disconnectCluster`, which keeps the client).
//!
//! Kueue creates the remote client on the first config loaded, starting it disconnected
//! (lost since then); before that there is no client, and no attempts suffix in messages.

use crate::cluster::Millis;

use super::kubeconfig::{Digest, LoadError};

/// The reason of `Active=True`.
pub const ACTIVE: &str = "Active";
/// The message of `Active=True`.
pub const CONNECTED: &str = "Connected";
/// The reason of `Active=False` when a session fails.
pub const CLIENT_CONNECTION_FAILED: &str = "ClientConnectionFailed";

/// Kueue's `retryIncrement`.
pub const RETRY_INCREMENT_MS: Millis = 5_000;
/// Kueue's `retryMaxSteps`.
pub const RETRY_MAX_STEPS: u32 = 7;

/// Kueue's `retryAfter`: 0 with no failed attempt, else 5 s·2^(n-1) with n capped at 7 (5 s,
/// 10 s, …, 320 s).
pub fn retry_after(failed_attempts: u32) -> Millis {
    if failed_attempts == 0 {
        return 0;
    }
    RETRY_INCREMENT_MS << (failed_attempts.min(RETRY_MAX_STEPS) - 1)
}

/// What the caller does after [`Connection::loaded`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Nothing: connected with this config, or a session is under way.
    Keep,
    /// Start session `generation` now (any other session must be stopped).
    Connect { generation: u64 },
    /// Not before `at` (the backoff): call [`Connection::loaded`] again then.
    Defer { at: Millis },
}

/// The MultiKueueCluster's `Active` condition: status, reason, message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Active {
    pub status: bool,
    pub reason: String,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Session {
    generation: u64,
    synced: bool,
}

/// One MultiKueueCluster's connection (see the module).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Connection {
    generation: u64,
    /// The digest of the config in use; `None` until one is loaded (Kueue has no remote
    /// client yet).
    digest: Option<Digest>,
    session: Option<Session>,
    connected: bool,
    failed_attempts: u32,
    next_attempt_at: Option<Millis>,
    disconnected_since: Option<Millis>,
    /// The last session failure, while not connected.
    last_error: Option<String>,
    /// The last load failure, until a config loads.
    load_error: Option<LoadError>,
}

impl Connection {
    /// Whether a remote client exists (a config has been loaded once).
    pub fn has_client(&self) -> bool {
        self.digest.is_some()
    }

    /// Connected: every watch established, not dropped since.
    pub fn connected(&self) -> bool {
        self.connected
    }

    /// Since when the worker is unreachable: its first drop, or the client's creation if it
    /// never connected (`None` when connected, or without a client).
    pub fn disconnected_since(&self) -> Option<Millis> {
        self.disconnected_since
    }

    pub fn failed_attempts(&self) -> u32 {
        self.failed_attempts
    }

    /// When the next attempt may start (`None`: at once).
    pub fn next_attempt_at(&self) -> Option<Millis> {
        self.next_attempt_at
    }

    /// The generation of the session that should run, if any: a running session of any
    /// other generation is stale and must be stopped.
    pub fn session(&self) -> Option<u64> {
        self.session.map(|s| s.generation)
    }

    /// A config with `digest` was loaded and validated at `now` (see the module).
    pub fn loaded(&mut self, digest: Digest, now: Millis) -> Decision {
        self.load_error = None;
        if self.digest.is_none() {
            // `newRemoteClient`: disconnected from creation.
            self.disconnected_since.get_or_insert(now);
        }
        let changed = self.digest != Some(digest);
        if changed {
            self.digest = Some(digest);
            self.session = None;
            self.failed_attempts = 0;
            self.next_attempt_at = None;
        } else if self.session.is_some() {
            // Connected on it, or still listing.
            return Decision::Keep;
        }
        if !self.connected
            && let Some(at) = self.next_attempt_at.filter(|at| *at > now)
        {
            return Decision::Defer { at };
        }
        self.generation += 1;
        self.session = Some(Session {
            generation: self.generation,
            synced: false,
        });
        Decision::Connect {
            generation: self.generation,
        }
    }

    /// The config could not be loaded: the session is dropped and the worker disconnected.
    pub fn load_failed(&mut self, error: LoadError, now: Millis) {
        self.load_error = Some(error);
        if self.has_client() {
            self.disconnect(now);
        }
    }

    /// Session `generation` listed every kind and watches: connected.
    pub fn synced(&mut self, generation: u64) {
        let Some(s) = self.session.as_mut().filter(|s| s.generation == generation) else {
            return;
        };
        s.synced = true;
        self.connected = true;
        self.disconnected_since = None;
        self.failed_attempts = 0;
        self.next_attempt_at = None;
        self.last_error = None;
    }

    /// Session `generation` ended at `now` with `error` (see the module).
    pub fn ended(&mut self, generation: u64, error: String, now: Millis) {
        let Some(s) = self.session.filter(|s| s.generation == generation) else {
            return;
        };
        if !s.synced {
            self.failed_attempts += 1;
            self.next_attempt_at = Some(now + retry_after(self.failed_attempts));
            self.last_error = Some(error);
        }
        self.disconnect(now);
    }

    /// The MultiKueueCluster deleted: no client, no session (Kueue's `stopAndRemoveCluster`).
    pub fn remove(&mut self) {
        let generation = self.generation;
        *self = Connection {
            generation,
            ..Connection::default()
        };
    }

    /// When [`Connection::loaded`] must run again, if nothing else happens: the end of the
    /// backoff while disconnected without a session.
    pub fn wake_at(&self) -> Option<Millis> {
        (self.has_client() && !self.connected && self.session.is_none())
            .then_some(self.next_attempt_at)
            .flatten()
    }

    /// The `Active` condition to write, or `None` to keep the one written (a first session
    /// still listing, or a reconnect after a dropped watch still under way: Kueue writes
    /// nothing until it has an outcome).
    pub fn active(&self) -> Option<Active> {
        if let Some(e) = &self.load_error {
            return Some(self.inactive(e.reason, e.condition_message()));
        }
        if self.connected {
            return Some(Active {
                status: true,
                reason: ACTIVE.into(),
                message: CONNECTED.into(),
            });
        }
        let e = self
            .last_error
            .as_ref()
            .filter(|_| self.failed_attempts > 0)?;
        Some(self.inactive(CLIENT_CONNECTION_FAILED, e.clone()))
    }

    /// `Active=False`, with HEAD's suffix once an attempt failed (`updateStatus`).
    fn inactive(&self, reason: &str, message: String) -> Active {
        let message = match (self.failed_attempts, self.next_attempt_at) {
            (n, Some(at)) if n > 0 && self.has_client() => format!(
                "{message}; connection attempts: {n}, next connection attempt: {}",
                rfc3339(at)
            ),
            _ => message,
        };
        Active {
            status: false,
            reason: reason.into(),
            message,
        }
    }

    /// Kueue's `markDisconnected` after stopping the watches.
    fn disconnect(&mut self, now: Millis) {
        self.session = None;
        self.connected = false;
        self.disconnected_since.get_or_insert(now);
    }
}

/// Go's `t.UTC().Format(time.RFC3339)`: whole seconds, `Z`.
pub fn rfc3339(ms: Millis) -> String {
    jiff::Timestamp::from_second(ms.div_euclid(1000))
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH)
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::super::kubeconfig::{BAD_KUBECONFIG, digest};
    use super::*;

    /// 2026-01-01T00:00:00Z.
    const T0: Millis = 1_767_225_600_000;

    fn failed(reason: &str, message: &str) -> Option<Active> {
        Some(Active {
            status: false,
            reason: reason.into(),
            message: message.into(),
        })
    }

    fn connected() -> Option<Active> {
        Some(Active {
            status: true,
            reason: "Active".into(),
            message: "Connected".into(),
        })
    }

    #[test]
    fn backoff_doubles_from_5s_to_320s() {
        let all: Vec<Millis> = (0..=9).map(retry_after).collect();
        assert_eq!(
            all,
            [0, 5, 10, 20, 40, 80, 160, 320, 320, 320].map(|s| s * 1000)
        );
    }

    #[test]
    fn rfc3339_is_whole_seconds_in_utc() {
        assert_eq!(rfc3339(T0 + 5_999), "2026-01-01T00:00:05Z");
    }

    #[test]
    fn a_first_session_connects_and_nothing_is_written_before() {
        let mut c = Connection::default();
        assert_eq!(
            (c.has_client(), c.active(), c.wake_at()),
            (false, None, None)
        );
        let d = digest(b"a");
        assert_eq!(c.loaded(d, T0), Decision::Connect { generation: 1 });
        assert_eq!(c.disconnected_since(), Some(T0));
        assert_eq!(c.active(), None);
        // Loaded again while listing: nothing.
        assert_eq!(c.loaded(d, T0 + 1000), Decision::Keep);
        c.synced(1);
        assert!(c.connected());
        assert_eq!(c.disconnected_since(), None);
        assert_eq!(c.active(), connected());
        assert_eq!(c.loaded(d, T0 + 2000), Decision::Keep);
    }

    #[test]
    fn failed_attempts_back_off_with_kueues_suffix() {
        let mut c = Connection::default();
        let d = digest(b"a");
        let mut now = T0;
        let mut generation = match c.loaded(d, now) {
            Decision::Connect { generation } => generation,
            other => panic!("{other:?}"),
        };
        for (n, wait) in [
            (1, 5),
            (2, 10),
            (3, 20),
            (4, 40),
            (5, 80),
            (6, 160),
            (7, 320),
            (8, 320),
        ] {
            c.ended(generation, "connection refused".into(), now);
            let next = now + wait * 1000;
            assert_eq!((c.failed_attempts(), c.next_attempt_at()), (n, Some(next)));
            assert_eq!(c.wake_at(), Some(next));
            assert_eq!(
                c.active(),
                failed(
                    "ClientConnectionFailed",
                    &format!(
                        "connection refused; connection attempts: {n}, next connection attempt: {}",
                        rfc3339(next)
                    )
                )
            );
            // Lost since the client's creation, across attempts.
            assert_eq!(c.disconnected_since(), Some(T0));
            assert_eq!(c.loaded(d, next - 1), Decision::Defer { at: next });
            now = next;
            generation = match c.loaded(d, now) {
                Decision::Connect { generation } => generation,
                other => panic!("{other:?}"),
            };
        }
        assert_eq!(
            c.active().unwrap().message,
            format!(
                "connection refused; connection attempts: 8, next connection attempt: {}",
                rfc3339(now)
            ),
            "the condition stays until an outcome"
        );
        c.synced(generation);
        assert_eq!((c.failed_attempts(), c.active()), (0, connected()));
    }

    #[test]
    fn a_dropped_watch_reconnects_at_once_then_backs_off() {
        let mut c = Connection::default();
        let d = digest(b"a");
        c.loaded(d, T0);
        c.synced(1);
        c.ended(1, "watch ended".into(), T0 + 60_000);
        assert!(!c.connected());
        assert_eq!(c.disconnected_since(), Some(T0 + 60_000));
        // Nothing written yet: Kueue reconnects first.
        assert_eq!((c.active(), c.failed_attempts()), (None, 0));
        assert_eq!(c.wake_at(), None);
        assert_eq!(
            c.loaded(d, T0 + 60_000),
            Decision::Connect { generation: 2 }
        );
        c.ended(2, "connection refused".into(), T0 + 61_000);
        assert_eq!(c.failed_attempts(), 1);
        assert_eq!(c.disconnected_since(), Some(T0 + 60_000), "the first drop");
        assert_eq!(
            c.active(),
            failed(
                "ClientConnectionFailed",
                "connection refused; connection attempts: 1, next connection attempt: 2026-01-01T00:01:06Z"
            )
        );
    }

    #[test]
    fn a_rotated_config_resets_attempts_and_reconnects_at_once() {
        let mut c = Connection::default();
        c.loaded(digest(b"t1"), T0);
        c.synced(1);
        c.ended(1, "watch ended".into(), T0);
        c.loaded(digest(b"t1"), T0);
        c.ended(2, "Unauthorized".into(), T0);
        c.loaded(digest(b"t1"), T0 + 5_000);
        c.ended(3, "Unauthorized".into(), T0 + 5_000);
        assert_eq!(c.failed_attempts(), 2);
        assert_eq!(
            c.loaded(digest(b"t1"), T0 + 6_000),
            Decision::Defer { at: T0 + 15_000 }
        );
        // The Secret rewritten: no waiting.
        assert_eq!(
            c.loaded(digest(b"t2"), T0 + 6_000),
            Decision::Connect { generation: 4 }
        );
        assert_eq!((c.failed_attempts(), c.next_attempt_at()), (0, None));
        // The old session's outcome is ignored.
        c.ended(3, "late".into(), T0 + 6_000);
        c.synced(3);
        assert_eq!((c.session(), c.connected()), (Some(4), false));
        c.synced(4);
        assert_eq!(c.active(), connected());
    }

    #[test]
    fn a_config_rotated_while_connected_keeps_the_worker_reachable() {
        let mut c = Connection::default();
        c.loaded(digest(b"t1"), T0);
        c.synced(1);
        assert_eq!(
            c.loaded(digest(b"t2"), T0 + 1000),
            Decision::Connect { generation: 2 }
        );
        // Kueue rebuilds the client without marking it disconnected.
        assert!(c.connected());
        assert_eq!(c.disconnected_since(), None);
        c.ended(2, "Unauthorized".into(), T0 + 2000);
        assert!(!c.connected());
        assert_eq!(c.disconnected_since(), Some(T0 + 2000));
        assert_eq!(c.failed_attempts(), 1);
    }

    #[test]
    fn a_load_failure_disconnects_and_names_its_reason() {
        let bad = LoadError {
            reason: BAD_KUBECONFIG,
            message: "secrets \"w1-secret\" not found".into(),
            not_found: true,
        };
        // No client yet: no suffix, nothing to disconnect.
        let mut c = Connection::default();
        c.load_failed(bad.clone(), T0);
        assert_eq!(
            c.active(),
            failed(
                "BadKubeConfig",
                "load client config failed: secrets \"w1-secret\" not found"
            )
        );
        assert_eq!((c.has_client(), c.disconnected_since()), (false, None));

        let d = digest(b"a");
        c.loaded(d, T0);
        c.synced(1);
        c.load_failed(bad.clone(), T0 + 1000);
        assert_eq!((c.connected(), c.session()), (false, None));
        assert_eq!(c.disconnected_since(), Some(T0 + 1000));
        assert_eq!(c.active().unwrap().reason, "BadKubeConfig");
        // The same config back: reconnects at once (no failed attempt).
        assert_eq!(c.loaded(d, T0 + 2000), Decision::Connect { generation: 2 });
        assert_eq!(c.active(), None);

        // After failed attempts, a load failure carries the attempts suffix, as in Kueue.
        c.ended(2, "refused".into(), T0 + 2000);
        c.load_failed(bad, T0 + 3000);
        assert_eq!(
            c.active().unwrap().message,
            "load client config failed: secrets \"w1-secret\" not found; connection attempts: 1, \
             next connection attempt: 2026-01-01T00:00:07Z"
        );
    }

    #[test]
    fn a_removed_cluster_starts_over_with_new_generations() {
        let mut c = Connection::default();
        c.loaded(digest(b"a"), T0);
        c.remove();
        assert_eq!(
            (c.has_client(), c.session(), c.active()),
            (false, None, None)
        );
        assert_eq!(
            c.loaded(digest(b"a"), T0),
            Decision::Connect { generation: 2 }
        );
    }
}
