//! `wasq crds`: Kueue's CustomResourceDefinitions, generated from the Rust types in
//! [`crate::api`] with schemars and kube's structural-schema transforms (the same settings
//! `#[derive(CustomResource)]` uses), plus Kueue's short names, printer columns and status
//! subresources, so that `kubectl apply -f` of a Kueue manifest works unchanged.
//!
//! `v1beta2` is served and stored; `v1beta1` is served with the same schema (no conversion
//! webhook: fields Kueue renamed in `v1beta2`, such as `spec.cohort`, must use their new names).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceColumnDefinition, CustomResourceDefinition, CustomResourceDefinitionNames,
    CustomResourceDefinitionSpec, CustomResourceDefinitionVersion, CustomResourceSubresourceStatus,
    CustomResourceSubresources, CustomResourceValidation, JSONSchemaProps,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use crate::api::{self, GROUP};
use crate::k8s::schema::kinds::KueueKind;
use crate::k8s::status::queues::{ClusterQueueStatus, CohortStatus, LocalQueueStatus};

/// The JSON schema of `T` after kube's structural rewrites (no `$ref`s, no `oneOf` enums).
pub fn structural_schema<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::openapi3()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .with_transform(schemars::transform::AddNullable::default())
        .with_transform(kube::core::schema::StructuralSchemaRewriter)
        .with_transform(kube::core::schema::OptionalEnum)
        .with_transform(kube::core::schema::OptionalIntOrString)
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    tidy(&mut schema);
    schema
}

/// The defaults Kueue's CRDs declare (`+kubebuilder:default`), by kind and property path
/// (`[]` steps into a list's items), as JSON: the API server writes them into every stored
/// object, so that `kubectl get` and other readers see them as Kueue's users do. wasq's types
/// default the same fields when they decode, so only what is stored changes.
const KUEUE_DEFAULTS: &[(KueueKind, &str, &str)] = &[
    (
        KueueKind::ClusterQueue,
        "spec.queueingStrategy",
        r#""BestEffortFIFO""#,
    ),
    (KueueKind::ClusterQueue, "spec.stopPolicy", r#""None""#),
    (KueueKind::ClusterQueue, "spec.fairSharing.weight", "1"),
    (KueueKind::ClusterQueue, "spec.flavorFungibility", "{}"),
    (
        KueueKind::ClusterQueue,
        "spec.flavorFungibility.whenCanBorrow",
        r#""MayStopSearch""#,
    ),
    (
        KueueKind::ClusterQueue,
        "spec.flavorFungibility.whenCanPreempt",
        r#""TryNextFlavor""#,
    ),
    (KueueKind::ClusterQueue, "spec.preemption", "{}"),
    (
        KueueKind::ClusterQueue,
        "spec.preemption.borrowWithinCohort",
        "{}",
    ),
    (
        KueueKind::ClusterQueue,
        "spec.preemption.borrowWithinCohort.policy",
        r#""Never""#,
    ),
    (
        KueueKind::ClusterQueue,
        "spec.preemption.reclaimWithinCohort",
        r#""Never""#,
    ),
    (
        KueueKind::ClusterQueue,
        "spec.preemption.withinClusterQueue",
        r#""Never""#,
    ),
    (KueueKind::LocalQueue, "spec.stopPolicy", r#""None""#),
    (KueueKind::LocalQueue, "spec.fairSharing.weight", "1"),
    (KueueKind::Cohort, "spec.fairSharing.weight", "1"),
    (KueueKind::Workload, "spec.active", "true"),
    (KueueKind::Workload, "spec.podSets[].count", "1"),
    (KueueKind::Workload, "spec.podSets[].name", r#""main""#),
    (
        KueueKind::MultiKueueCluster,
        "spec.clusterSource.kubeConfig.locationType",
        r#""Secret""#,
    ),
];

/// The limits and CEL rules (`x-kubernetes-validations`) of Kueue's CRDs that wasq's types do
/// not say themselves, by kind and property path, as JSON merged into the property's schema.
/// The loader checks the same rules with the API server's words
/// ([`crate::api::multikueue`]).
pub const KUEUE_RULES: &[(KueueKind, &str, &str)] = &[
    (
        KueueKind::MultiKueueCluster,
        "spec",
        r#"{"required": ["clusterSource"]}"#,
    ),
    (
        KueueKind::MultiKueueCluster,
        "spec.clusterSource",
        r#"{"x-kubernetes-validations": [{
            "rule": "[has(self.kubeConfig),has(self.clusterProfileRef)].filter(x,x==true).size() == 1",
            "message": "exactly one of the fields in [kubeConfig clusterProfileRef] must be set"}]}"#,
    ),
    (
        KueueKind::MultiKueueCluster,
        "spec.clusterSource.kubeConfig",
        r#"{"required": ["location"]}"#,
    ),
    (
        KueueKind::MultiKueueCluster,
        "spec.clusterSource.kubeConfig.location",
        r#"{"minLength": 1, "maxLength": 256}"#,
    ),
    (
        KueueKind::MultiKueueCluster,
        "spec.clusterSource.clusterProfileRef",
        r#"{"required": ["name"]}"#,
    ),
    (
        KueueKind::MultiKueueCluster,
        "spec.clusterSource.clusterProfileRef.name",
        r#"{"minLength": 1, "maxLength": 256}"#,
    ),
    (
        KueueKind::MultiKueueCluster,
        "status.conditions",
        r#"{"maxItems": 16}"#,
    ),
    (
        KueueKind::MultiKueueConfig,
        "spec",
        r#"{"required": ["clusters"]}"#,
    ),
    (
        KueueKind::MultiKueueConfig,
        "spec.clusters",
        r#"{"minItems": 1, "maxItems": 20, "x-kubernetes-list-type": "atomic",
            "x-kubernetes-validations": [{
            "rule": "size(self.filter(i, size(self.filter(j, j == i)) > 1)) == 0",
            "message": "must be unique"}]}"#,
    ),
    (
        KueueKind::MultiKueueConfig,
        "spec.clusters[]",
        r#"{"maxLength": 256}"#,
    ),
    (
        KueueKind::Workload,
        "status",
        r#"{"x-kubernetes-validations": [{
            "rule": "!has(oldSelf.clusterName) || !has(self.clusterName) || oldSelf.clusterName == self.clusterName",
            "message": "clusterName is immutable once set"}, {
            "rule": "!has(self.clusterName) || (!has(self.nominatedClusterNames) || (has(self.nominatedClusterNames) && size(self.nominatedClusterNames) == 0))",
            "message": "clusterName and nominatedClusterNames are mutually exclusive"}]}"#,
    ),
    (
        KueueKind::Workload,
        "status.clusterName",
        r#"{"maxLength": 256}"#,
    ),
    (
        KueueKind::Workload,
        "status.nominatedClusterNames",
        r#"{"maxItems": 20, "x-kubernetes-list-type": "atomic"}"#,
    ),
    (
        KueueKind::Workload,
        "status.nominatedClusterNames[]",
        r#"{"maxLength": 256}"#,
    ),
];

/// The schema of the property at `path` (`[]` steps into a list's items), if `schema` has it.
pub fn property_mut<'a>(schema: &'a mut Value, path: &str) -> Option<&'a mut Value> {
    let mut at = Some(schema);
    for step in path.split('.') {
        let (name, items) = match step.strip_suffix("[]") {
            Some(name) => (name, true),
            None => (step, false),
        };
        at = at.and_then(|s| s.pointer_mut(&format!("/properties/{name}")));
        if items {
            at = at.and_then(|s| s.get_mut("items"));
        }
    }
    at
}

/// Sets each of [`KUEUE_DEFAULTS`] of `kind` whose property `schema` has, and merges each of
/// [`KUEUE_RULES`] of `kind` into its property.
fn add_kueue_defaults(kind: KueueKind, schema: &mut Value) {
    for (_, path, default) in KUEUE_DEFAULTS.iter().filter(|(k, _, _)| *k == kind) {
        if let Some(property) = property_mut(schema, path) {
            property["default"] = serde_json::from_str(default).expect("a default is JSON");
        }
    }
    for (_, path, rules) in KUEUE_RULES.iter().filter(|(k, _, _)| *k == kind) {
        let rules: Map<String, Value> = serde_json::from_str(rules).expect("rules are JSON");
        if let Some(Value::Object(property)) = property_mut(schema, path) {
            property.extend(rules);
        }
    }
}

/// The root schema of a Kueue object: `apiVersion`, `kind`, `metadata` as Kubernetes wants
/// them, and the kind's own fields, with Kueue's defaults ([`KUEUE_DEFAULTS`]).
pub fn object_schema(kind: KueueKind) -> Value {
    let mut root = match kind {
        KueueKind::ResourceFlavor => structural_schema::<api::ResourceFlavor>(),
        KueueKind::Cohort => structural_schema::<api::Cohort>(),
        KueueKind::ClusterQueue => structural_schema::<api::ClusterQueue>(),
        KueueKind::LocalQueue => structural_schema::<api::LocalQueue>(),
        KueueKind::WorkloadPriorityClass => structural_schema::<api::WorkloadPriorityClass>(),
        KueueKind::Workload => structural_schema::<api::Workload>(),
        KueueKind::AdmissionCheck => structural_schema::<api::checks::AdmissionCheck>(),
        KueueKind::ProvisioningRequestConfig => {
            structural_schema::<api::checks::ProvisioningRequestConfig>()
        }
        KueueKind::Topology => structural_schema::<api::topology::Topology>(),
        KueueKind::MultiKueueCluster => structural_schema::<api::multikueue::MultiKueueCluster>(),
        KueueKind::MultiKueueConfig => structural_schema::<api::multikueue::MultiKueueConfig>(),
    };
    let status = match kind {
        KueueKind::Cohort => Some(structural_schema::<CohortStatus>()),
        KueueKind::ClusterQueue => Some(structural_schema::<ClusterQueueStatus>()),
        KueueKind::LocalQueue => Some(structural_schema::<LocalQueueStatus>()),
        _ => None,
    };
    let Some(obj) = root.as_object_mut() else {
        return root;
    };
    obj.remove("title");
    obj.insert("type".into(), json!("object"));
    let props = obj
        .entry("properties")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .expect("properties is an object");
    props.insert("apiVersion".into(), json!({"type": "string"}));
    props.insert("kind".into(), json!({"type": "string"}));
    props.insert("metadata".into(), json!({"type": "object"}));
    if let Some(mut status) = status {
        if let Some(s) = status.as_object_mut() {
            s.remove("title");
        }
        props.insert("status".into(), status);
    }
    if let Some(required) = obj.get_mut("required").and_then(Value::as_array_mut) {
        required.retain(|r| r != "metadata");
        if required.is_empty() {
            obj.remove("required");
        }
    }
    add_kueue_defaults(kind, &mut root);
    root
}

/// Rewrites what Kubernetes refuses in a structural schema: `true` / empty schemas (a
/// `serde_json::Value` field) become `x-kubernetes-preserve-unknown-fields`; `conditions` and
/// `podSets` become list maps keyed like Kueue's, so server-side apply merges them by key; an
/// optional enum lists its values only, as controller-gen writes Kueue's (schemars adds `null`,
/// which kubectl's validation of a CRD refuses: "unknown object type \"nil\"").
fn tidy(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Array(values)) = map.get_mut("enum") {
                values.retain(|v| !v.is_null());
            }

            if let Some(Value::Object(props)) = map.get_mut("properties") {
                for (name, prop) in props.iter_mut() {
                    if is_any(prop) {
                        *prop = json!({"x-kubernetes-preserve-unknown-fields": true});
                        continue;
                    }
                    let key = match name.as_str() {
                        "conditions" => Some("type"),
                        "podSets" | "podSetAssignments" | "flavors" => Some("name"),
                        _ => None,
                    };
                    if let Some(key) = key
                        && let Some(p) = prop.as_object_mut()
                        && p.get("type") == Some(&json!("array"))
                        && item_has_required(p, key)
                    {
                        p.insert("x-kubernetes-list-type".into(), json!("map"));
                        p.insert("x-kubernetes-list-map-keys".into(), json!([key]));
                    }
                }
            }
            if let Some(items) = map.get_mut("items")
                && is_any(items)
            {
                *items = json!({"x-kubernetes-preserve-unknown-fields": true});
            }
            if let Some(Value::Object(_)) = map.get("additionalProperties")
                && let Some(ap) = map.get_mut("additionalProperties")
                && is_any(ap)
            {
                *ap = json!({"x-kubernetes-preserve-unknown-fields": true});
            }
            for v in map.values_mut() {
                tidy(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(tidy),
        _ => {}
    }
}

/// Whole-number `minimum`/`maximum` written as integers: `JSONSchemaProps` holds them as floats
/// (an unsigned field's `minimum: 0.0`), the API server stores `0`, and a GitOps tool comparing
/// the two would show a difference for ever.
fn integral_bounds(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                if matches!(key.as_str(), "minimum" | "maximum")
                    && let Some(f) = v.as_f64().filter(|f| f.fract() == 0.0 && v.is_f64())
                {
                    *v = json!(f as i64);
                } else {
                    integral_bounds(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_bounds),
        _ => {}
    }
}

/// A schema that accepts anything (what schemars makes of `serde_json::Value`).
fn is_any(schema: &Value) -> bool {
    match schema {
        Value::Bool(true) => true,
        Value::Object(m) => {
            let meaningful = m
                .keys()
                .any(|k| !matches!(k.as_str(), "description" | "nullable" | "default" | "title"));
            !meaningful
        }
        _ => false,
    }
}

fn item_has_required(array: &Map<String, Value>, key: &str) -> bool {
    array
        .get("items")
        .and_then(|i| i.get("required"))
        .and_then(Value::as_array)
        .is_some_and(|r| r.iter().any(|k| k == key))
}

struct Shape {
    kind: KueueKind,
    singular: &'static str,
    short_names: &'static [&'static str],
    columns: &'static [(&'static str, &'static str, &'static str, &'static str, i32)],
    status: bool,
}

const SHAPES: [Shape; 11] = [
    Shape {
        kind: KueueKind::ResourceFlavor,
        singular: "resourceflavor",
        short_names: &["flavor", "flavors", "rf"],
        columns: &[],
        status: false,
    },
    Shape {
        kind: KueueKind::Cohort,
        singular: "cohort",
        short_names: &["co"],
        columns: &[],
        status: true,
    },
    Shape {
        kind: KueueKind::ClusterQueue,
        singular: "clusterqueue",
        short_names: &["cq"],
        columns: &[
            (
                "Cohort",
                ".spec.cohortName",
                "string",
                "Cohort that this ClusterQueue belongs to",
                0,
            ),
            (
                "Strategy",
                ".spec.queueingStrategy",
                "string",
                "The queueing strategy used to prioritize workloads",
                1,
            ),
            (
                "Pending Workloads",
                ".status.pendingWorkloads",
                "integer",
                "Number of pending workloads",
                0,
            ),
            (
                "Admitted Workloads",
                ".status.admittedWorkloads",
                "integer",
                "Number of admitted workloads that haven't finished yet",
                1,
            ),
        ],
        status: true,
    },
    Shape {
        kind: KueueKind::LocalQueue,
        singular: "localqueue",
        short_names: &["queue", "queues", "lq"],
        columns: &[
            (
                "ClusterQueue",
                ".spec.clusterQueue",
                "string",
                "Backing ClusterQueue",
                0,
            ),
            (
                "Pending Workloads",
                ".status.pendingWorkloads",
                "integer",
                "Number of pending workloads",
                0,
            ),
            (
                "Admitted Workloads",
                ".status.admittedWorkloads",
                "integer",
                "Number of admitted workloads that haven't finished yet.",
                0,
            ),
        ],
        status: true,
    },
    Shape {
        kind: KueueKind::WorkloadPriorityClass,
        singular: "workloadpriorityclass",
        short_names: &["wpc"],
        columns: &[(
            "Value",
            ".value",
            "integer",
            "Value of workloadPriorityClass's Priority",
            0,
        )],
        status: false,
    },
    Shape {
        kind: KueueKind::Workload,
        singular: "workload",
        short_names: &["kwl", "kueueworkload", "kueueworkloads"],
        columns: &[
            (
                "Queue",
                ".spec.queueName",
                "string",
                "Name of the queue this workload was submitted to",
                0,
            ),
            (
                "Reserved in",
                ".status.admission.clusterQueue",
                "string",
                "Name of the ClusterQueue where the workload is reserving quota",
                0,
            ),
            (
                "Admitted",
                ".status.conditions[?(@.type=='Admitted')].status",
                "string",
                "Admission status",
                0,
            ),
            (
                "Finished",
                ".status.conditions[?(@.type=='Finished')].status",
                "string",
                "Workload finished",
                0,
            ),
            (
                "Age",
                ".metadata.creationTimestamp",
                "date",
                "Time this workload was created",
                0,
            ),
        ],
        status: true,
    },
    Shape {
        kind: KueueKind::AdmissionCheck,
        singular: "admissioncheck",
        short_names: &["ac"],
        columns: &[(
            "Age",
            ".metadata.creationTimestamp",
            "date",
            "Time this AdmissionCheck was created",
            0,
        )],
        status: true,
    },
    Shape {
        kind: KueueKind::ProvisioningRequestConfig,
        singular: "provisioningrequestconfig",
        short_names: &["prc"],
        columns: &[],
        status: false,
    },
    Shape {
        kind: KueueKind::Topology,
        singular: "topology",
        short_names: &["topo"],
        columns: &[],
        status: false,
    },
    Shape {
        kind: KueueKind::MultiKueueCluster,
        singular: "multikueuecluster",
        short_names: &["mkc"],
        columns: &[
            (
                "Connected",
                ".status.conditions[?(@.type=='Active')].status",
                "string",
                "MultiKueueCluster is connected",
                0,
            ),
            (
                "Age",
                ".metadata.creationTimestamp",
                "date",
                "Time this workload was created",
                0,
            ),
        ],
        status: true,
    },
    Shape {
        kind: KueueKind::MultiKueueConfig,
        singular: "multikueueconfig",
        short_names: &["mkconf"],
        columns: &[],
        status: false,
    },
];

/// The CRD of one kind.
pub fn crd(kind: KueueKind) -> CustomResourceDefinition {
    let shape = SHAPES
        .iter()
        .find(|s| s.kind == kind)
        .expect("every kind has a shape");
    let schema: JSONSchemaProps = serde_json::from_value(object_schema(kind))
        .expect("schemars output is a valid JSONSchemaProps");
    Definition {
        group: GROUP,
        kind: kind.kind(),
        plural: kind.plural(),
        singular: shape.singular,
        short_names: shape.short_names,
        namespaced: kind.namespaced(),
        columns: shape.columns,
        status: shape.status,
        versions: &[("v1beta2", true), ("v1beta1", false)],
    }
    .build(schema)
}

/// What differs between wasq's CRDs.
struct Definition {
    group: &'static str,
    kind: &'static str,
    plural: &'static str,
    singular: &'static str,
    short_names: &'static [&'static str],
    namespaced: bool,
    columns: &'static [(&'static str, &'static str, &'static str, &'static str, i32)],
    status: bool,
    /// Served versions, and whether each is the one stored; all share the schema.
    versions: &'static [(&'static str, bool)],
}

impl Definition {
    fn build(&self, schema: JSONSchemaProps) -> CustomResourceDefinition {
        let columns: Vec<CustomResourceColumnDefinition> = self
            .columns
            .iter()
            .map(
                |&(name, path, type_, description, priority)| CustomResourceColumnDefinition {
                    name: name.into(),
                    json_path: path.into(),
                    type_: type_.into(),
                    description: Some(description.into()),
                    priority: (priority != 0).then_some(priority),
                    format: None,
                },
            )
            .collect();
        let version = |&(name, storage): &(&str, bool)| CustomResourceDefinitionVersion {
            name: name.into(),
            served: true,
            storage,
            additional_printer_columns: (!columns.is_empty()).then(|| columns.clone()),
            schema: Some(CustomResourceValidation {
                open_api_v3_schema: Some(schema.clone()),
            }),
            subresources: self.status.then(|| CustomResourceSubresources {
                status: Some(CustomResourceSubresourceStatus(json!({}))),
                scale: None,
            }),
            ..CustomResourceDefinitionVersion::default()
        };
        CustomResourceDefinition {
            metadata: ObjectMeta {
                name: Some(format!("{}.{}", self.plural, self.group)),
                ..ObjectMeta::default()
            },
            spec: CustomResourceDefinitionSpec {
                group: self.group.into(),
                names: CustomResourceDefinitionNames {
                    kind: self.kind.into(),
                    list_kind: Some(format!("{}List", self.kind)),
                    plural: self.plural.into(),
                    singular: Some(self.singular.into()),
                    short_names: Some(self.short_names.iter().map(|s| s.to_string()).collect()),
                    categories: None,
                },
                scope: if self.namespaced {
                    "Namespaced"
                } else {
                    "Cluster"
                }
                .into(),
                versions: self.versions.iter().map(version).collect(),
                conversion: None,
                preserve_unknown_fields: None,
            },
            status: None,
        }
    }
}

/// The root schema of wasq's `QueuePolicy`, `spec.mode` defaulted as the server should store it.
pub fn queue_policy_schema() -> Value {
    let mut root = structural_schema::<api::policy::QueuePolicy>();
    if let Some(obj) = root.as_object_mut() {
        obj.remove("title");
        obj.insert("type".into(), json!("object"));
        if let Some(props) = obj.get_mut("properties").and_then(Value::as_object_mut) {
            props.insert("apiVersion".into(), json!({"type": "string"}));
            props.insert("kind".into(), json!({"type": "string"}));
            props.insert("metadata".into(), json!({"type": "object"}));
        }
        if let Some(required) = obj.get_mut("required").and_then(Value::as_array_mut) {
            required.retain(|r| r != "metadata");
        }
    }
    if let Some(mode) = root.pointer_mut("/properties/spec/properties/mode") {
        mode["default"] = json!("Enforce");
    }
    root
}

/// wasq's `QueuePolicy` CRD (`policies.wasq.dev/v1alpha1`, cluster-scoped).
pub fn queue_policy_crd() -> CustomResourceDefinition {
    let schema: JSONSchemaProps = serde_json::from_value(queue_policy_schema())
        .expect("schemars output is a valid JSONSchemaProps");
    Definition {
        group: api::policy::POLICY_GROUP,
        kind: api::policy::QUEUE_POLICY_KIND,
        plural: "queuepolicies",
        singular: "queuepolicy",
        short_names: &["qp"],
        namespaced: false,
        columns: &[
            (
                "Extension",
                ".spec.extension",
                "string",
                "The decision the policy makes",
                0,
            ),
            (
                "Mode",
                ".spec.mode",
                "string",
                "Enforce: it decides; Shadow: compared, never acted on",
                0,
            ),
            (
                "Ready",
                ".status.conditions[?(@.type=='Ready')].status",
                "string",
                "Whether it decides (or shadows) for its ClusterQueues",
                0,
            ),
            (
                "Digest",
                ".status.digest",
                "string",
                "The sha256 of the module live now",
                0,
            ),
            (
                "Agreement",
                ".status.shadow.agreement",
                "string",
                "How often a shadow policy agreed with the policy that decides",
                0,
            ),
            (
                "ClusterQueues",
                ".status.clusterQueues",
                "integer",
                "How many ClusterQueues it applies to",
                1,
            ),
            (
                "Age",
                ".metadata.creationTimestamp",
                "date",
                "Time this QueuePolicy was created",
                0,
            ),
        ],
        status: true,
        versions: &[(api::policy::POLICY_VERSION, true)],
    }
    .build(schema)
}

/// Every CRD, in the order `kubectl apply` should see them.
pub fn crds() -> Vec<CustomResourceDefinition> {
    KueueKind::ALL
        .into_iter()
        .map(crd)
        .chain([queue_policy_crd()])
        .collect()
}

/// The CRDs as one multi-document YAML stream with `apiVersion` and `kind` set.
pub fn crds_yaml() -> Result<String, serde_saphyr::SerializeError> {
    let mut out = String::new();
    for crd in crds() {
        let mut value = serde_json::to_value(&crd).expect("a CRD serializes");
        integral_bounds(&mut value);
        if let Some(obj) = value.as_object_mut() {
            let mut ordered = Map::new();
            ordered.insert("apiVersion".into(), json!("apiextensions.k8s.io/v1"));
            ordered.insert("kind".into(), json!("CustomResourceDefinition"));
            ordered.extend(std::mem::take(obj));
            *obj = ordered;
        }
        out.push_str("---\n");
        out.push_str(&serde_saphyr::to_string(&value)?);
    }
    Ok(out)
}
