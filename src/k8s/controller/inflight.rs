//! Scheduling decisions' Workload status writes in flight (a child module of `controller.rs`):
//! sent in the background so that the next cycle is scheduled while they travel, and acted on
//! when they land.
//!
//! Invariants:
//! - At most one write per Workload is in flight; a decision on a Workload whose write is in
//!   flight waits behind it (computed from the object the first write returns), so each
//!   object's writes go out in decision order. A newer pending reason for such a Workload is
//!   dropped: the next pass computes it again.
//! - At most [`MAX_IN_FLIGHT`] requests are in flight at once.
//! - The quota of an admission is held in memory from the decision; a write that fails, or
//!   finds that it no longer applies, releases it and queues the Workload again when it lands
//!   ([`super::decisions`]), so once every write has landed memory holds no quota the cluster
//!   does not show.
//! - A conflict is answered by the Workload read again; the write is computed from it and sent
//!   again (at most [`MAX_ATTEMPTS`] attempts).
//! - The reconcile pass lands every write before it looks at anything else
//!   ([`Controller::land_all`]): only its scheduling cycles overlap with the writes.
//! - Every write lands: a task that ends without an answer (a panic) lands as a failure.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use kube::core::DynamicObject;
use tokio::sync::{Semaphore, mpsc};

use super::decisions::{After, StatusWrite};
use super::{Controller, Error, MAX_ATTEMPTS};
use crate::cluster::Millis;
use crate::k8s::client::MAX_IN_FLIGHT;
use crate::k8s::client::writer::Writer;
use crate::k8s::schema::kinds::KueueKind;
use crate::k8s::sync::mirror::{Observed, Source};

/// A decision's write with what to do when it lands.
pub(super) struct DecisionWrite {
    pub write: StatusWrite<'static>,
    pub after: After,
    /// The decision's time.
    pub now: Millis,
}

/// How the API server answered a write.
enum Answer {
    Written(DynamicObject),
    /// A conflict, and the Workload read again (or the error reading it).
    Conflict(Error, Option<Result<DynamicObject, Error>>),
    Failed(Error),
}

/// One answer, for the Workload `key`.
struct Landed {
    key: String,
    answer: Answer,
}

/// The writes in flight and those waiting behind them.
pub(super) struct InFlight {
    tx: mpsc::UnboundedSender<Landed>,
    rx: mpsc::UnboundedReceiver<Landed>,
    /// Workload key → its write in flight and the attempt it is.
    flying: HashMap<String, (DecisionWrite, usize)>,
    /// Workload key → writes decided while one was in flight, in decision order.
    waiting: HashMap<String, VecDeque<DecisionWrite>>,
    permits: Arc<Semaphore>,
}

impl Default for InFlight {
    fn default() -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        InFlight {
            tx,
            rx,
            flying: HashMap::new(),
            waiting: HashMap::new(),
            permits: Arc::new(Semaphore::new(MAX_IN_FLIGHT)),
        }
    }
}

impl InFlight {
    pub fn is_empty(&self) -> bool {
        self.flying.is_empty()
    }

    /// Whether a write of this Workload is in flight or waiting.
    pub fn busy(&self, key: &str) -> bool {
        self.flying.contains_key(key) || self.waiting.contains_key(key)
    }

    /// Whether an eviction of this Workload is in flight or waiting.
    pub fn evicting(&self, key: &str) -> bool {
        let is_eviction = |d: &DecisionWrite| matches!(d.after, After::Evict { .. });
        self.flying.get(key).is_some_and(|(j, _)| is_eviction(j))
            || self
                .waiting
                .get(key)
                .is_some_and(|q| q.iter().any(is_eviction))
    }

    /// Whether an admission is in flight or waiting (its Workload holds quota the cluster does
    /// not show yet).
    pub fn admitting(&self) -> bool {
        let is_admission = |d: &DecisionWrite| matches!(d.after, After::Admit { .. });
        self.flying.values().any(|(j, _)| is_admission(j))
            || self.waiting.values().flatten().any(is_admission)
    }
}

/// Answers a write whose task ends without an answer (a panic, a cancelled task), so that
/// [`Controller::land_all`] never waits for it forever.
struct AnswerOnDrop {
    tx: mpsc::UnboundedSender<Landed>,
    key: Option<String>,
}

impl AnswerOnDrop {
    fn answer(mut self, answer: Answer) {
        if let Some(key) = self.key.take() {
            let _ = self.tx.send(Landed { key, answer });
        }
    }
}

impl Drop for AnswerOnDrop {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            let object = key.clone();
            let answer = Answer::Failed(Error::Unanswered { object });
            let _ = self.tx.send(Landed { key, answer });
        }
    }
}

/// Sends one patch (after a permit), and on a conflict reads the Workload again unless this
/// was the last attempt.
async fn send(
    writer: Arc<Writer>,
    permits: Arc<Semaphore>,
    tx: mpsc::UnboundedSender<Landed>,
    key: String,
    target: (String, String, serde_json::Value, &'static str),
    last: bool,
) {
    let guard = AnswerOnDrop { tx, key: Some(key) };
    let (ns, name, body, manager) = target;
    let answer = {
        let _permit = permits.acquire_owned().await;
        match writer
            .patch_workload_status_as(&ns, &name, &body, manager)
            .await
        {
            Ok(obj) => Answer::Written(obj),
            Err(e) if e.is_conflict() && !last => {
                let fresh = writer.get_workload(&ns, &name).await;
                Answer::Conflict(e, Some(fresh))
            }
            Err(e) if e.is_conflict() => Answer::Conflict(e, None),
            Err(e) => Answer::Failed(e),
        }
    };
    guard.answer(answer);
}

impl Controller {
    /// Sends a decision's write, or queues it behind the write of the same Workload in
    /// flight. A pending reason for a busy Workload is dropped.
    pub(super) async fn dispatch(&mut self, d: DecisionWrite) {
        let key = d.write.key.clone();
        if self.inflight.busy(&key) {
            if !matches!(d.after, After::Pending { .. }) {
                self.inflight.waiting.entry(key).or_default().push_back(d);
            }
            return;
        }
        self.launch(d, 1).await;
    }

    /// Computes a write from the latest known object and sends it; a write that no longer
    /// applies (or a Workload gone) is acted on at once, and the next waiting one launched.
    async fn launch(&mut self, mut d: DecisionWrite, mut attempt: usize) {
        loop {
            let key = d.write.key.clone();
            let target = self.mirror.workloads.get(&key).and_then(|wl| {
                let status = (d.write.build)(wl)?;
                let (ns, name) = super::ns_name(wl);
                Some((ns, name, super::status_patch(wl, &status), d.write.manager))
            });
            if let Some(target) = target {
                let what = match d.after {
                    After::Admit { .. } => "admission",
                    After::Evict { .. } => "eviction",
                    After::Pending { .. } => "pending",
                };
                self.count_status_write(what);
                let last = attempt >= MAX_ATTEMPTS;
                tokio::spawn(send(
                    self.writer.clone(),
                    self.inflight.permits.clone(),
                    self.inflight.tx.clone(),
                    key.clone(),
                    target,
                    last,
                ));
                self.inflight.flying.insert(key, (d, attempt));
                return;
            }
            self.after_write(&key, d.after, Ok(None), d.now).await;
            match self.next_waiting(&key) {
                Some(next) => {
                    d = next;
                    attempt = 1;
                }
                None => return,
            }
        }
    }

    fn next_waiting(&mut self, key: &str) -> Option<DecisionWrite> {
        let queue = self.inflight.waiting.get_mut(key)?;
        let next = queue.pop_front();
        if queue.is_empty() {
            self.inflight.waiting.remove(key);
        }
        next
    }

    /// Acts on the writes that have landed, without waiting for others.
    pub(super) async fn land_ready(&mut self) {
        while let Ok(landed) = self.inflight.rx.try_recv() {
            self.land(landed).await;
        }
    }

    /// Waits until every write in flight (and every write waiting behind one) has landed.
    pub(super) async fn land_all(&mut self) {
        while !self.inflight.is_empty() {
            match self.inflight.rx.recv().await {
                Some(landed) => self.land(landed).await,
                None => return,
            }
        }
    }

    async fn land(&mut self, landed: Landed) {
        let Landed { key, answer } = landed;
        let Some((d, attempt)) = self.inflight.flying.remove(&key) else {
            return;
        };
        let result = match answer {
            Answer::Written(obj) => Ok(self.put_own_workload(&obj)),
            Answer::Conflict(_, Some(Ok(fresh))) => {
                tracing::info!(workload = %key, attempt, "conflict writing status; reading the workload again");
                self.observe(Observed::Applied(Source::Kueue(KueueKind::Workload), fresh));
                self.launch(d, attempt + 1).await;
                return;
            }
            Answer::Conflict(_, Some(Err(e))) | Answer::Conflict(e, None) | Answer::Failed(e) => {
                if e.is_not_found() {
                    self.mirror.forget_workload(&key);
                    Ok(None)
                } else {
                    Err(e)
                }
            }
        };
        self.after_write(&key, d.after, result, d.now).await;
        if let Some(next) = self.next_waiting(&key) {
            self.launch(next, 1).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_task_ending_without_an_answer_still_lands_as_a_failure() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let answered = AnswerOnDrop {
            tx: tx.clone(),
            key: Some("ns/a".into()),
        };
        answered.answer(Answer::Failed(Error::Unanswered {
            object: "given".into(),
        }));
        drop(AnswerOnDrop {
            tx,
            key: Some("ns/b".into()),
        });
        let landed: Vec<(String, String)> = std::iter::from_fn(|| rx.try_recv().ok())
            .map(|l| match l.answer {
                Answer::Failed(e) => (l.key, e.to_string()),
                _ => (l.key, "other".into()),
            })
            .collect();
        assert_eq!(
            landed,
            [
                (
                    "ns/a".to_string(),
                    "given: the write ended without an answer".to_string()
                ),
                (
                    "ns/b".to_string(),
                    "ns/b: the write ended without an answer".to_string()
                ),
            ]
        );
    }
}
