//! Objects exactly as a running Kueue (v1beta2 API, default configuration and feature gates)
//! leaves them in the API server, to load into the double: a `batch/v1` Job Kueue manages, the
//! Workload its job reconciler creates, that Workload's status once Kueue's scheduler admitted
//! it or left it pending, the Job as Kueue starts it, and the ClusterQueue status Kueue's
//! ClusterQueue controller writes. The migration tests (a cluster switched from Kueue to wasq
//! and back) and the start-up bench load them.
//!
//! Where each shape comes from in Kueue's source:
//! - the Workload: `jobframework.ConstructWorkload` / `NewWorkload` (name from
//!   `GetWorkloadNameForOwnerWithGVK`, the `kueue.x-k8s.io/job-uid` label, the
//!   `kueue.x-k8s.io/resource-in-use` finalizer, a controller owner reference with
//!   `blockOwnerDeletion`), `job.PodSets` (podSet `main`, the template without the Job
//!   controller's labels but `batch.kubernetes.io/job-name`, `count` = min(parallelism,
//!   completions), a `topologyRequest` with the completion index label), `PrepareWorkloadPriority` (`priority` always set, `priorityClassRef` for a
//!   WorkloadPriorityClass), the CRD's `active: true` default;
//! - admitted: `workload.SetQuotaReservation` (`QuotaReserved`, "Quota reserved in ClusterQueue
//!   <cq>"), `SyncAdmittedCondition` (`Admitted`, "The workload is admitted"), both with the
//!   Workload's generation, and — `waitForPodsReady` being on by default in v1beta2 —
//!   `generatePodsReadyCondition` (`PodsReady` `Started`, "All pods reached readiness and the
//!   workload is running");
//! - pending: the scheduler's `requeueAndUpdate` under `UnadmittedWorkloadsObservability` (beta,
//!   on): `QuotaReserved=False` with the granular reason (`WaitingForQuota`) and the flavor
//!   assigner's message, `Admitted=False` `NoReservation` "The workload has no reservation",
//!   and `status.resourceRequests` (`PropagateResourceRequests`);
//! - the started Job: `startJob` → `RunWithPodSetsInfo` with `podset.FromAssignment` (the
//!   flavors' node labels and tolerations) and `getPodSetsInfoFromStatus` (the
//!   `kueue.x-k8s.io/podset` label, `AssignQueueLabelsForPods`' LocalQueue and ClusterQueue
//!   labels, TopologyAwareScheduling's `kueue.x-k8s.io/workload` annotation);
//! - the ClusterQueue status: `updateCqStatusIfChanged` (`flavorsReservation`, `flavorsUsage`,
//!   the counts, `Active` `Ready` "Can admit new workloads").

use serde_json::{Value, json};
use sha1::{Digest, Sha1};

use crate::api::jobs::names::workload_name;

pub const KUEUE_API_VERSION: &str = "kueue.x-k8s.io/v1beta2";
/// Where the double serves Kueue's kinds.
pub const KUEUE_PREFIX: &str = "/apis/kueue.x-k8s.io/v1beta2";

/// A ResourceFlavor: its node labels and one `NoSchedule` toleration for `dedicated=<name>`.
#[derive(Debug, Clone)]
pub struct Flavor {
    pub name: String,
    pub node_labels: Value,
}

impl Flavor {
    pub fn new(name: &str, node_labels: Value) -> Flavor {
        Flavor {
            name: name.into(),
            node_labels,
        }
    }

    fn tolerations(&self) -> Value {
        json!([{"key": "dedicated", "operator": "Equal", "value": self.name, "effect": "NoSchedule"}])
    }

    pub fn path(&self) -> String {
        format!("{KUEUE_PREFIX}/resourceflavors/{}", self.name)
    }

    pub fn object(&self) -> Value {
        json!({"apiVersion": KUEUE_API_VERSION, "kind": "ResourceFlavor",
               "metadata": {"name": self.name, "generation": 1},
               "spec": {"nodeLabels": self.node_labels, "tolerations": self.tolerations()}})
    }
}

/// A ClusterQueue covering cpu and memory on one flavor, with the defaults the CRD adds.
pub fn cluster_queue(
    name: &str,
    cohort: Option<&str>,
    flavor: &str,
    cpu: &str,
    memory: &str,
) -> (String, Value) {
    let mut spec = json!({
        "namespaceSelector": {},
        "queueingStrategy": "BestEffortFIFO",
        "stopPolicy": "None",
        "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
        "preemption": {"withinClusterQueue": "Never", "reclaimWithinCohort": "Never",
                       "borrowWithinCohort": {"policy": "Never"}},
        "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [{"name": flavor,
            "resources": [{"name": "cpu", "nominalQuota": cpu}, {"name": "memory", "nominalQuota": memory}]}]}]});
    if let Some(c) = cohort {
        spec["cohortName"] = json!(c);
    }
    (
        format!("{KUEUE_PREFIX}/clusterqueues/{name}"),
        json!({"apiVersion": KUEUE_API_VERSION, "kind": "ClusterQueue",
               "metadata": {"name": name, "generation": 1}, "spec": spec}),
    )
}

/// A LocalQueue `name` in `namespace` pointing at `cluster_queue`.
pub fn local_queue(namespace: &str, name: &str, cluster_queue: &str) -> (String, Value) {
    (
        format!("{KUEUE_PREFIX}/namespaces/{namespace}/localqueues/{name}"),
        json!({"apiVersion": KUEUE_API_VERSION, "kind": "LocalQueue",
               "metadata": {"name": name, "namespace": namespace, "generation": 1},
               "spec": {"clusterQueue": cluster_queue, "stopPolicy": "None"}}),
    )
}

/// A WorkloadPriorityClass.
pub fn priority_class(name: &str, value: i32) -> (String, Value) {
    (
        format!("{KUEUE_PREFIX}/workloadpriorityclasses/{name}"),
        json!({"apiVersion": KUEUE_API_VERSION, "kind": "WorkloadPriorityClass",
               "metadata": {"name": name, "generation": 1}, "value": value}),
    )
}

/// A Namespace.
pub fn namespace(name: &str) -> (String, Value) {
    (
        format!("/api/v1/namespaces/{name}"),
        json!({"apiVersion": "v1", "kind": "Namespace",
               "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}}}),
    )
}

/// `milli` cpu as `resource.Quantity` prints it (DecimalSI: `2`, `500m`).
pub fn cpu_quantity(milli: i64) -> String {
    if milli % 1000 == 0 {
        (milli / 1000).to_string()
    } else {
        format!("{milli}m")
    }
}

/// `mebibytes` as `resource.Quantity` prints memory (BinarySI: `2Gi`, `512Mi`).
pub fn memory_quantity(mebibytes: i64) -> String {
    if mebibytes % 1024 == 0 {
        format!("{}Gi", mebibytes / 1024)
    } else {
        format!("{mebibytes}Mi")
    }
}

/// The ClusterQueue status Kueue writes: one flavor's reserved (= admitted, no admission
/// checks) cpu and memory, the counts, and `Active`.
pub fn cluster_queue_status(
    flavor: &str,
    cpu_milli: i64,
    memory_mi: i64,
    admitted: i32,
    pending: i32,
) -> Value {
    let usage = json!([{"name": flavor, "resources": [
        {"name": "cpu", "total": cpu_quantity(cpu_milli), "borrowed": "0"},
        {"name": "memory", "total": memory_quantity(memory_mi), "borrowed": "0"}]}]);
    json!({
        "flavorsReservation": usage,
        "flavorsUsage": usage,
        "reservingWorkloads": admitted,
        "admittedWorkloads": admitted,
        "pendingWorkloads": pending,
        "conditions": [{"type": "Active", "status": "True", "reason": "Ready",
                        "message": "Can admit new workloads", "observedGeneration": 1,
                        "lastTransitionTime": "2025-12-31T22:00:00Z"}]})
}

/// A `batch/v1` Job labelled for a LocalQueue, and what Kueue makes of it.
#[derive(Debug, Clone)]
pub struct KueueJob {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub queue: String,
    pub pods: i32,
    pub cpu_milli: i64,
    pub memory_mi: i64,
    /// A WorkloadPriorityClass (`kueue.x-k8s.io/priority-class`) and its value.
    pub priority_class: Option<(String, i32)>,
    /// `metadata.creationTimestamp` of the Job and of its Workload (RFC 3339).
    pub created: String,
}

impl KueueJob {
    /// A Job of `pods` pods of `cpu_milli` cpu and `memory_mi` MiB each, created at `created`;
    /// its UID is derived from its namespace and name, in UUID form.
    pub fn new(
        namespace: &str,
        name: &str,
        queue: &str,
        pods: i32,
        cpu_milli: i64,
        memory_mi: i64,
        created: &str,
    ) -> KueueJob {
        let digest = Sha1::digest(format!("{namespace}/{name}").as_bytes());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        let uid = format!(
            "{}-{}-4{}-8{}-{}",
            &hex[0..8],
            &hex[8..12],
            &hex[13..16],
            &hex[17..20],
            &hex[20..32]
        );
        KueueJob {
            namespace: namespace.into(),
            name: name.into(),
            uid,
            queue: queue.into(),
            pods,
            cpu_milli,
            memory_mi,
            priority_class: None,
            created: created.into(),
        }
    }

    pub fn with_priority_class(mut self, name: &str, value: i32) -> KueueJob {
        self.priority_class = Some((name.into(), value));
        self
    }

    /// `jobframework.GetWorkloadNameForOwnerWithGVK` for `batch/v1` Job.
    pub fn workload_name(&self) -> String {
        workload_name("job", "Job", "batch", &self.name, &self.uid)
    }

    pub fn job_path(&self) -> String {
        format!(
            "/apis/batch/v1/namespaces/{}/jobs/{}",
            self.namespace, self.name
        )
    }

    pub fn workload_path(&self) -> String {
        format!(
            "{KUEUE_PREFIX}/namespaces/{}/workloads/{}",
            self.namespace,
            self.workload_name()
        )
    }

    fn labels(&self) -> Value {
        let mut labels = json!({"kueue.x-k8s.io/queue-name": self.queue});
        if let Some((class, _)) = &self.priority_class {
            labels["kueue.x-k8s.io/priority-class"] = json!(class);
        }
        labels
    }

    /// The pod template as the API server stores it (defaults applied), without labels.
    fn pod_spec(&self) -> Value {
        json!({
            "containers": [{
                "name": "main",
                "image": "registry.example/train:1.0",
                "command": ["python", "train.py", "--epochs=3"],
                "env": [{"name": "WORLD_SIZE", "value": self.pods.to_string()}],
                "resources": {"requests": {"cpu": cpu_quantity(self.cpu_milli),
                                           "memory": memory_quantity(self.memory_mi)},
                              "limits": {"memory": memory_quantity(self.memory_mi)}},
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "imagePullPolicy": "IfNotPresent"}],
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "securityContext": {},
            "schedulerName": "default-scheduler"})
    }

    /// The Job as stored once Kueue's webhook suspended it and the API server defaulted it.
    pub fn job(&self) -> Value {
        let uid = &self.uid;
        json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": self.name, "namespace": self.namespace, "uid": uid,
                         "generation": 1, "creationTimestamp": self.created, "labels": self.labels()},
            "spec": {
                "parallelism": self.pods, "completions": self.pods, "backoffLimit": 6,
                "completionMode": "NonIndexed", "suspend": true,
                "podReplacementPolicy": "TerminatingOrFailed",
                "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}},
                "template": {
                    "metadata": {"labels": {"batch.kubernetes.io/controller-uid": uid,
                                            "batch.kubernetes.io/job-name": self.name,
                                            "controller-uid": uid, "job-name": self.name}},
                    "spec": self.pod_spec()}},
            "status": {}})
    }

    /// The Job as Kueue's `startJob` leaves it on `flavor` in `cluster_queue`, its pods
    /// running and ready.
    pub fn running_job(&self, flavor: &Flavor, cluster_queue: &str, started: &str) -> Value {
        let mut job = self.job();
        job["metadata"]["generation"] = json!(2);
        job["spec"]["suspend"] = json!(false);
        let template = &mut job["spec"]["template"];
        let labels = template["metadata"]["labels"]
            .as_object_mut()
            .expect("labels");
        labels.insert("kueue.x-k8s.io/podset".into(), json!("main"));
        labels.insert("kueue.x-k8s.io/local-queue-name".into(), json!(self.queue));
        labels.insert(
            "kueue.x-k8s.io/cluster-queue-name".into(),
            json!(cluster_queue),
        );
        template["metadata"]["annotations"] =
            json!({"kueue.x-k8s.io/workload": self.workload_name()});
        template["spec"]["nodeSelector"] = flavor.node_labels.clone();
        template["spec"]["tolerations"] = flavor.tolerations();
        job["status"] = json!({"startTime": started, "active": self.pods, "ready": self.pods,
                               "terminating": 0, "uncountedTerminatedPods": {}});
        job
    }

    /// The Workload Kueue's job reconciler creates for the Job (no status yet).
    pub fn workload(&self) -> Value {
        // `cleanLabels` drops the Job controller's labels but `batch.kubernetes.io/job-name`.
        let template = json!({"metadata": {"labels": {"batch.kubernetes.io/job-name": self.name}},
                              "spec": self.pod_spec()});
        let mut spec = json!({
            "active": true,
            "queueName": self.queue,
            "priority": self.priority_class.as_ref().map_or(0, |(_, v)| *v),
            // TopologyAwareScheduling (beta, on): `NewPodSetTopologyRequest(...).PodIndexLabel`.
            "podSets": [{"name": "main", "count": self.pods, "template": template,
                         "topologyRequest": {"podIndexLabel": "batch.kubernetes.io/job-completion-index"}}]});
        if let Some((class, _)) = &self.priority_class {
            spec["priorityClassRef"] =
                json!({"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": class});
        }
        json!({
            "apiVersion": KUEUE_API_VERSION, "kind": "Workload",
            "metadata": {
                "name": self.workload_name(), "namespace": self.namespace,
                "uid": format!("wl-{}", self.uid), "generation": 1,
                "creationTimestamp": self.created,
                "labels": {"kueue.x-k8s.io/job-uid": self.uid},
                "finalizers": ["kueue.x-k8s.io/resource-in-use"],
                "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": self.name,
                                     "uid": self.uid, "controller": true, "blockOwnerDeletion": true}]},
            "spec": spec})
    }

    /// The cpu and memory the whole Job requests.
    pub fn usage(&self) -> (i64, i64) {
        let pods = i64::from(self.pods);
        (self.cpu_milli * pods, self.memory_mi * pods)
    }

    /// `status.admission` as Kueue's scheduler writes it for `flavor` in `cluster_queue`.
    pub fn admission(&self, cluster_queue: &str, flavor: &str) -> Value {
        let (cpu, memory) = self.usage();
        json!({"clusterQueue": cluster_queue, "podSetAssignments": [{
            "name": "main",
            "flavors": {"cpu": flavor, "memory": flavor},
            "resourceUsage": {"cpu": cpu_quantity(cpu), "memory": memory_quantity(memory)},
            "count": self.pods}]})
    }

    /// The Workload admitted by Kueue at `at` (its pods ready since).
    pub fn admitted_workload(&self, cluster_queue: &str, flavor: &str, at: &str) -> Value {
        let mut wl = self.workload();
        let condition = |type_: &str, reason: &str, message: &str| {
            json!({"type": type_, "status": "True", "reason": reason, "message": message,
                   "observedGeneration": 1, "lastTransitionTime": at})
        };
        wl["status"] = json!({
        "admission": self.admission(cluster_queue, flavor),
        "conditions": [
            condition("QuotaReserved", "QuotaReserved",
                      &format!("Quota reserved in ClusterQueue {cluster_queue}")),
            condition("Admitted", "Admitted", "The workload is admitted"),
            condition("PodsReady", "Started", "All pods reached readiness and the workload is running"),
        ]});
        wl
    }

    /// The Job once its pods succeeded (the Job controller's `Complete` condition).
    pub fn completed_job(
        &self,
        flavor: &Flavor,
        cluster_queue: &str,
        started: &str,
        done: &str,
    ) -> Value {
        let mut job = self.running_job(flavor, cluster_queue, started);
        let condition = |type_: &str, reason: &str, message: &str| {
            json!({"type": type_, "status": "True", "reason": reason, "message": message,
                   "lastProbeTime": done, "lastTransitionTime": done})
        };
        job["status"] = json!({
            "startTime": started, "completionTime": done, "active": 0, "ready": 0,
            "succeeded": self.pods, "terminating": 0, "uncountedTerminatedPods": {},
            "conditions": [
                condition("SuccessCriteriaMet", "CompletionsReached", "Reached expected number of succeeded pods"),
                condition("Complete", "CompletionsReached", "Reached expected number of succeeded pods")]});
        job
    }

    /// The admitted Workload once Kueue declared it finished at `done` (`Finished` from the
    /// Job's `Complete` condition; the job reconciler then removes the finalizer).
    pub fn finished_workload(
        &self,
        cluster_queue: &str,
        flavor: &str,
        at: &str,
        done: &str,
    ) -> Value {
        let mut wl = self.admitted_workload(cluster_queue, flavor, at);
        wl["metadata"]
            .as_object_mut()
            .expect("metadata")
            .remove("finalizers");
        wl["status"]["conditions"]
            .as_array_mut()
            .expect("conditions")
            .push(
                json!({"type": "Finished", "status": "True", "reason": "Succeeded",
                         "message": "Reached expected number of succeeded pods",
                         "observedGeneration": 1, "lastTransitionTime": done}),
            );
        wl
    }

    /// The Workload Kueue's scheduler left pending at `at`, with `reason` and `message`.
    pub fn pending_workload(&self, reason: &str, message: &str, at: &str) -> Value {
        let mut wl = self.workload();
        let (cpu, memory) = self.usage();
        wl["status"] = json!({
            "conditions": [
                {"type": "QuotaReserved", "status": "False", "reason": reason, "message": message,
                 "observedGeneration": 1, "lastTransitionTime": at},
                {"type": "Admitted", "status": "False", "reason": "NoReservation",
                 "message": "The workload has no reservation", "observedGeneration": 1,
                 "lastTransitionTime": at}],
            "resourceRequests": [{"name": "main", "resources": {
                "cpu": cpu_quantity(cpu), "memory": memory_quantity(memory)}}]});
        wl
    }

    /// The flavor assigner's message for this Job when `missing_milli` cpu is short on
    /// `flavor` (`Assignment.Message`, `fitsResourceQuota`).
    pub fn insufficient_cpu_message(flavor: &str, missing_milli: i64) -> String {
        format!(
            "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor {flavor}, {} more needed",
            cpu_quantity(missing_milli)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_quantities_as_kueue_prints_them() {
        // Kueue's `TestGenerateWorkloadNameWithExtra`, "short name, no extra".
        let mut job = KueueJob::new("ns", "name", "lq", 1, 1000, 512, "2026-01-01T00:00:00Z");
        job.uid = "uid".into();
        assert_eq!(job.workload_name(), "job-name-ef3a1");
        assert_eq!(cpu_quantity(2000), "2");
        assert_eq!(cpu_quantity(1500), "1500m");
        assert_eq!(memory_quantity(2048), "2Gi");
        assert_eq!(memory_quantity(1536), "1536Mi");
    }
}
