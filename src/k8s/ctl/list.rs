//! `wasq ctl list clusterqueues|localqueues|workloads`: kueuectl's `list` — its columns, its
//! filters and its empty-result messages — with `-o wide` adding wasq's own columns.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::Context;
use kube::api::{Api, DynamicObject, ListParams};
use serde_json::Value;

use super::table::{age, layout};
use crate::k8s::schema::kinds::KueueKind;

/// What is listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listed {
    ClusterQueues,
    LocalQueues,
    Workloads,
}

/// How a listing is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// kueuectl's columns.
    Table,
    /// kueuectl's columns and wasq's: a workload's priority and position in its
    /// ClusterQueue; a queue's reserving workloads (and a ClusterQueue's queueing strategy).
    Wide,
    /// The objects as a `List`.
    Json,
    Yaml,
}

/// kueuectl's `list` flags.
#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    /// The namespace of namespaced kinds; `None` for all (`-A`).
    pub namespace: Option<String>,
    /// `-l`, passed to the server.
    pub selector: Option<String>,
    /// `--field-selector`, passed to the server.
    pub field_selector: Option<String>,
    /// `-c`: LocalQueues of this ClusterQueue; Workloads admitted to it.
    pub cluster_queue: Option<String>,
    /// `-q`: Workloads of this LocalQueue.
    pub local_queue: Option<String>,
    /// `--status`: Workloads in any of these (`all`, `pending`, `quotareserved`, `admitted`,
    /// `finished`; any case).
    pub statuses: Vec<String>,
    /// `--active`: ClusterQueues whose `Active` condition is (not) True.
    pub active: Option<bool>,
}

/// What a listing prints: on standard output, and kubectl's "No resources found" on standard
/// error.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    pub stdout: String,
    pub stderr: String,
}

const STATUSES: [&str; 5] = ["all", "pending", "quotareserved", "admitted", "finished"];

/// Lists `what` as kueuectl does, at `now` (ages and execution times).
pub async fn list(
    client: &kube::Client,
    what: Listed,
    options: &ListOptions,
    output: Output,
    now: jiff::Timestamp,
) -> anyhow::Result<Listing> {
    for s in &options.statuses {
        if !STATUSES.contains(&s.to_lowercase().as_str()) {
            anyhow::bail!(
                "invalid status value ({s}). Must be \"all\", \"pending\", \"admitted\" or \"finished\""
            );
        }
    }
    let kind = match what {
        Listed::ClusterQueues => KueueKind::ClusterQueue,
        Listed::LocalQueues => KueueKind::LocalQueue,
        Listed::Workloads => KueueKind::Workload,
    };
    let resource = kind.api_resource();
    let api: Api<DynamicObject> = match (kind.namespaced(), &options.namespace) {
        (true, Some(ns)) => Api::namespaced_with(client.clone(), ns, &resource),
        _ => Api::all_with(client.clone(), &resource),
    };
    let mut params = ListParams::default();
    if let Some(l) = &options.selector {
        params = params.labels(l);
    }
    if let Some(f) = &options.field_selector {
        params = params.fields(f);
    }
    let objects = api
        .list(&params)
        .await
        .with_context(|| format!("listing {}", kind.plural()))?;
    let mut items: Vec<Value> = objects
        .items
        .into_iter()
        .map(serde_json::to_value)
        .collect::<Result<_, _>>()?;
    items.retain(|o| keeps(what, options, o));
    if items.is_empty() {
        let stderr = match (kind.namespaced(), &options.namespace) {
            (true, Some(ns)) => format!("No resources found in {ns} namespace.\n"),
            _ => "No resources found\n".to_string(),
        };
        return Ok(Listing {
            stdout: String::new(),
            stderr,
        });
    }
    let stdout = match output {
        Output::Json | Output::Yaml => {
            let list = serde_json::json!({
                "apiVersion": "v1",
                "kind": "List",
                "metadata": {"resourceVersion": ""},
                "items": items,
            });
            if output == Output::Json {
                format!("{}\n", serde_json::to_string_pretty(&list)?)
            } else {
                serde_saphyr::to_string(&list)?
            }
        }
        Output::Table | Output::Wide => {
            let wide = output == Output::Wide;
            let all_namespaces = kind.namespaced() && options.namespace.is_none();
            let (headers, rows) = match what {
                Listed::ClusterQueues => cluster_queues(&items, wide, now),
                Listed::LocalQueues => local_queues(&items, wide, now),
                Listed::Workloads => Workloads::new(client).rows(&items, wide, now).await?,
            };
            let (headers, rows) = if all_namespaces {
                with_namespaces(headers, rows, &items)
            } else {
                (headers, rows)
            };
            let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
            layout(&headers, &rows)
        }
    };
    Ok(Listing {
        stdout,
        stderr: String::new(),
    })
}

/// kueuectl's client-side filters.
fn keeps(what: Listed, options: &ListOptions, o: &Value) -> bool {
    match what {
        Listed::ClusterQueues => options
            .active
            .is_none_or(|active| condition_true(o, "Active") == active),
        Listed::LocalQueues => options
            .cluster_queue
            .as_ref()
            .is_none_or(|cq| str_at(o, "/spec/clusterQueue") == cq),
        Listed::Workloads => {
            let cq = options
                .cluster_queue
                .as_ref()
                .is_none_or(|cq| str_at(o, "/status/admission/clusterQueue") == cq);
            let lq = options
                .local_queue
                .as_ref()
                .is_none_or(|lq| str_at(o, "/spec/queueName") == lq);
            let status = workload_status(o).to_lowercase();
            let statuses = options.statuses.is_empty()
                || options
                    .statuses
                    .iter()
                    .any(|s| s.eq_ignore_ascii_case("all") || s.eq_ignore_ascii_case(&status));
            cq && lq && statuses
        }
    }
}

pub(super) fn str_at<'a>(o: &'a Value, pointer: &str) -> &'a str {
    o.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn number_at(o: &Value, pointer: &str) -> String {
    o.pointer(pointer)
        .and_then(Value::as_i64)
        .unwrap_or(0)
        .to_string()
}

/// A condition of `status.conditions`, when it is True.
pub(super) fn true_condition<'a>(o: &'a Value, kind: &str) -> Option<&'a Value> {
    o.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind && c["status"] == "True")
}

pub(super) fn condition_true(o: &Value, kind: &str) -> bool {
    true_condition(o, kind).is_some()
}

pub(super) fn timestamp(v: Option<&Value>) -> Option<jiff::Timestamp> {
    v?.as_str()?.parse().ok()
}

fn age_of(o: &Value, now: jiff::Timestamp) -> String {
    timestamp(o.pointer("/metadata/creationTimestamp"))
        .map_or_else(|| "<unknown>".to_string(), |t| age(t, now))
}

/// Kueue's `workload.Status`: FINISHED, ADMITTED, QUOTARESERVED or PENDING.
pub(super) fn workload_status(o: &Value) -> &'static str {
    if condition_true(o, "Finished") {
        "FINISHED"
    } else if condition_true(o, "Admitted") {
        "ADMITTED"
    } else if condition_true(o, "QuotaReserved") {
        "QUOTARESERVED"
    } else {
        "PENDING"
    }
}

fn headers(names: &[&str]) -> Vec<String> {
    names.iter().map(|h| h.to_string()).collect()
}

fn cluster_queues(
    items: &[Value],
    wide: bool,
    now: jiff::Timestamp,
) -> (Vec<String>, Vec<Vec<String>>) {
    let mut names = vec![
        "NAME",
        "COHORT",
        "PENDING WORKLOADS",
        "ADMITTED WORKLOADS",
        "ACTIVE",
        "AGE",
    ];
    if wide {
        names.extend(["RESERVING WORKLOADS", "QUEUEING STRATEGY"]);
    }
    let rows = items
        .iter()
        .map(|o| {
            let mut row = vec![
                str_at(o, "/metadata/name").to_string(),
                str_at(o, "/spec/cohortName").to_string(),
                number_at(o, "/status/pendingWorkloads"),
                number_at(o, "/status/admittedWorkloads"),
                condition_true(o, "Active").to_string(),
                age_of(o, now),
            ];
            if wide {
                row.push(number_at(o, "/status/reservingWorkloads"));
                let strategy = str_at(o, "/spec/queueingStrategy");
                row.push(
                    if strategy.is_empty() {
                        "BestEffortFIFO"
                    } else {
                        strategy
                    }
                    .to_string(),
                );
            }
            row
        })
        .collect();
    (headers(&names), rows)
}

fn local_queues(
    items: &[Value],
    wide: bool,
    now: jiff::Timestamp,
) -> (Vec<String>, Vec<Vec<String>>) {
    let mut names = vec![
        "NAME",
        "CLUSTERQUEUE",
        "PENDING WORKLOADS",
        "ADMITTED WORKLOADS",
        "AGE",
    ];
    if wide {
        names.push("RESERVING WORKLOADS");
    }
    let rows = items
        .iter()
        .map(|o| {
            let mut row = vec![
                str_at(o, "/metadata/name").to_string(),
                str_at(o, "/spec/clusterQueue").to_string(),
                number_at(o, "/status/pendingWorkloads"),
                number_at(o, "/status/admittedWorkloads"),
                age_of(o, now),
            ];
            if wide {
                row.push(number_at(o, "/status/reservingWorkloads"));
            }
            row
        })
        .collect();
    (headers(&names), rows)
}

/// A NAMESPACE column first, as kubectl adds it with `-A`.
fn with_namespaces(
    mut headers: Vec<String>,
    rows: Vec<Vec<String>>,
    items: &[Value],
) -> (Vec<String>, Vec<Vec<String>>) {
    headers.insert(0, "NAMESPACE".to_string());
    let rows = rows
        .into_iter()
        .zip(items)
        .map(|(mut row, o)| {
            row.insert(0, str_at(o, "/metadata/namespace").to_string());
            row
        })
        .collect();
    (headers, rows)
}

/// What the workload columns look up: job types by apiVersion (discovery), LocalQueues'
/// ClusterQueues and ClusterQueues' pending workloads (the visibility API), each asked once.
pub(super) struct Workloads<'c> {
    client: &'c kube::Client,
    kinds: BTreeMap<String, BTreeMap<String, String>>,
    local_queues: BTreeMap<(String, String), String>,
    pending: BTreeMap<String, Vec<Value>>,
}

impl<'c> Workloads<'c> {
    pub(super) fn new(client: &'c kube::Client) -> Self {
        Workloads {
            client,
            kinds: BTreeMap::new(),
            local_queues: BTreeMap::new(),
            pending: BTreeMap::new(),
        }
    }

    async fn rows(
        &mut self,
        items: &[Value],
        wide: bool,
        now: jiff::Timestamp,
    ) -> anyhow::Result<(Vec<String>, Vec<Vec<String>>)> {
        let mut names = vec![
            "NAME",
            "JOB TYPE",
            "JOB NAME",
            "LOCALQUEUE",
            "CLUSTERQUEUE",
            "STATUS",
            "POSITION IN QUEUE",
            "EXEC TIME",
            "AGE",
        ];
        if wide {
            names.extend(["PRIORITY", "POSITION IN CLUSTERQUEUE"]);
        }
        let mut rows = Vec::new();
        for o in items {
            let namespace = str_at(o, "/metadata/namespace");
            let name = str_at(o, "/metadata/name");
            let owners: Vec<&Value> = o
                .pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .map(|a| a.iter().collect())
                .unwrap_or_default();
            let mut types = BTreeSet::new();
            for owner in &owners {
                if let Some(t) = self
                    .job_type(str_at(owner, "/apiVersion"), str_at(owner, "/kind"))
                    .await
                {
                    types.insert(t);
                }
            }
            let job_names: BTreeSet<&str> = owners.iter().map(|r| str_at(r, "/name")).collect();
            let local_queue = str_at(o, "/spec/queueName");
            let cluster_queue = match str_at(o, "/status/admission/clusterQueue") {
                "" => self.cluster_queue_of(namespace, local_queue).await?,
                cq => cq.to_string(),
            };
            let status = workload_status(o);
            let (mut in_lq, mut in_cq) = (String::new(), String::new());
            if status == "PENDING"
                && !cluster_queue.is_empty()
                && let Some(p) = self.position(&cluster_queue, namespace, name).await?
            {
                let position = |key: &str| p[key].as_i64().map_or(String::new(), |v| v.to_string());
                in_lq = position("positionInLocalQueue");
                in_cq = position("positionInClusterQueue");
            }
            let exec = match true_condition(o, "Admitted")
                .and_then(|c| timestamp(c.get("lastTransitionTime")))
            {
                Some(admitted) => {
                    let end = true_condition(o, "Finished")
                        .and_then(|c| timestamp(c.get("lastTransitionTime")))
                        .unwrap_or(now);
                    age(admitted, end)
                }
                None => String::new(),
            };
            let mut row = vec![
                name.to_string(),
                types.into_iter().collect::<Vec<_>>().join(", "),
                job_names.into_iter().collect::<Vec<_>>().join(", "),
                local_queue.to_string(),
                cluster_queue,
                status.to_string(),
                in_lq,
                exec,
                age_of(o, now),
            ];
            if wide {
                row.push(
                    o.pointer("/spec/priority")
                        .and_then(Value::as_i64)
                        .map_or(String::new(), |p| p.to_string()),
                );
                row.push(in_cq);
            }
            rows.push(row);
        }
        Ok((headers(&names), rows))
    }

    /// kueuectl's JOB TYPE of an owner: the singular name discovery gives its kind (with the
    /// resource's group when discovery names one), cut to 20 characters and `...`.
    pub(super) async fn job_type(&mut self, api_version: &str, kind: &str) -> Option<String> {
        if !self.kinds.contains_key(api_version) {
            let resources = if api_version.contains('/') {
                self.client.list_api_group_resources(api_version).await
            } else {
                self.client.list_core_api_resources(api_version).await
            };
            let by_kind = resources
                .map(|list| {
                    list.resources
                        .into_iter()
                        .filter(|r| !r.singular_name.is_empty())
                        .map(|r| {
                            let group = r.group.filter(|g| !g.is_empty());
                            let name = match group {
                                Some(g) => format!("{}.{g}", r.singular_name),
                                None => r.singular_name,
                            };
                            (r.kind, name)
                        })
                        .collect()
                })
                .unwrap_or_default();
            self.kinds.insert(api_version.to_string(), by_kind);
        }
        let name = self.kinds[api_version].get(kind)?;
        Some(if name.chars().count() > 20 {
            format!("{}...", name.chars().take(20).collect::<String>())
        } else {
            name.clone()
        })
    }

    /// The ClusterQueue of LocalQueue `namespace/name` (empty when there is none).
    pub(super) async fn cluster_queue_of(
        &mut self,
        namespace: &str,
        name: &str,
    ) -> anyhow::Result<String> {
        if name.is_empty() {
            return Ok(String::new());
        }
        let key = (namespace.to_string(), name.to_string());
        if let Some(cq) = self.local_queues.get(&key) {
            return Ok(cq.clone());
        }
        let api: Api<DynamicObject> = Api::namespaced_with(
            self.client.clone(),
            namespace,
            &KueueKind::LocalQueue.api_resource(),
        );
        let cq = match api.get_opt(name).await? {
            Some(lq) => str_at(&serde_json::to_value(lq)?, "/spec/clusterQueue").to_string(),
            None => String::new(),
        };
        self.local_queues.insert(key, cq.clone());
        Ok(cq)
    }

    /// The pending workload `namespace/name` in the visibility API's summary of ClusterQueue
    /// `cq` (`None` when the cluster serves no visibility API or the workload is not there).
    pub(super) async fn position(
        &mut self,
        cq: &str,
        namespace: &str,
        name: &str,
    ) -> anyhow::Result<Option<Value>> {
        if !self.pending.contains_key(cq) {
            let path = format!(
                "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/{cq}/pendingworkloads"
            );
            let request = http::Request::get(path).body(Vec::new())?;
            let items = match self.client.request::<Value>(request).await {
                Ok(summary) => summary["items"].as_array().cloned().unwrap_or_default(),
                Err(kube::Error::Api(e)) if e.code == 404 => Vec::new(),
                Err(e) => {
                    return Err(e).with_context(|| {
                        format!("reading the pending workloads of ClusterQueue {cq}")
                    });
                }
            };
            self.pending.insert(cq.to_string(), items);
        }
        Ok(self.pending[cq]
            .iter()
            .find(|p| {
                str_at(p, "/metadata/name") == name && str_at(p, "/metadata/namespace") == namespace
            })
            .cloned())
    }
}
