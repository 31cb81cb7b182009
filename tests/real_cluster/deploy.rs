//! The kustomize deployment of `deploy/`: the base and every overlay rendered by the pinned
//! kubectl (`kubectl kustomize`, built by `.ci/build-control-plane`), every rendered object
//! parsed into its typed Kubernetes (or cert-manager, Prometheus Operator) type with no field
//! left unknown, the controller's arguments accepted by wasq, and the objects of built-in kinds
//! applied to the real API server with strict field validation.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret, Service, ServiceAccount};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::cluster::{ControlPlane, bin_dir};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `deploy/base` and every folder of `deploy/overlays`.
fn kustomizations() -> Result<Vec<PathBuf>> {
    let mut dirs = vec![root().join("deploy/base")];
    let mut overlays: Vec<PathBuf> = std::fs::read_dir(root().join("deploy/overlays"))?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()?;
    overlays.sort();
    dirs.extend(overlays);
    Ok(dirs)
}

/// What `kubectl kustomize DIR` renders, one value per object.
fn render(kubectl: &Path, dir: &Path) -> Result<(String, Vec<Value>)> {
    let out = Command::new(kubectl).arg("kustomize").arg(dir).output()?;
    if !out.status.success() {
        bail!(
            "kubectl kustomize {}: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = String::from_utf8(out.stdout)?;
    let objects = serde_saphyr::from_multiple::<Value>(&text)
        .with_context(|| format!("parsing the rendering of {}", dir.display()))?;
    Ok((text, objects))
}

/// The fields of `object` that type `T` does not know.
fn unknown_in<T: DeserializeOwned>(object: &Value) -> Result<Vec<String>> {
    let mut unknown = Vec::new();
    let _: T = serde_ignored::deserialize(object.clone(), |path| unknown.push(path.to_string()))?;
    Ok(unknown)
}

/// cert-manager's and the Prometheus Operator's kinds, as far as the overlays use them; a field
/// they do not name is refused. (Their fields are only read by serde: the types are the check.)
#[allow(dead_code)]
mod others {
    use serde::Deserialize;
    use std::collections::BTreeMap;

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    pub struct Metadata {
        pub name: String,
        pub namespace: String,
        #[serde(default)]
        pub labels: BTreeMap<String, String>,
        #[serde(default)]
        pub annotations: BTreeMap<String, String>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    pub struct Object<S> {
        pub api_version: String,
        pub kind: String,
        pub metadata: Metadata,
        pub spec: S,
    }

    /// cert-manager.io/v1 Issuer (self-signed only).
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    pub struct IssuerSpec {
        pub self_signed: BTreeMap<String, String>,
    }

    /// cert-manager.io/v1 Certificate.
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    pub struct CertificateSpec {
        pub secret_name: String,
        pub dns_names: Vec<String>,
        pub issuer_ref: IssuerRef,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    pub struct IssuerRef {
        pub kind: String,
        pub name: String,
    }

    /// monitoring.coreos.com/v1 ServiceMonitor.
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    pub struct ServiceMonitorSpec {
        pub selector: k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector,
        pub endpoints: Vec<Endpoint>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    pub struct Endpoint {
        pub port: String,
        pub path: String,
        pub interval: String,
    }
}

/// Parses `object` into its type; the fields no type knows, by path.
fn check_typed(object: &Value) -> Result<Vec<String>> {
    let kind = object["kind"].as_str().unwrap_or_default();
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    Ok(match (api_version, kind) {
        ("v1", "Namespace") => unknown_in::<Namespace>(object)?,
        ("v1", "ServiceAccount") => unknown_in::<ServiceAccount>(object)?,
        ("v1", "ConfigMap") => unknown_in::<ConfigMap>(object)?,
        ("v1", "Secret") => unknown_in::<Secret>(object)?,
        ("v1", "Service") => unknown_in::<Service>(object)?,
        ("apps/v1", "Deployment") => unknown_in::<Deployment>(object)?,
        ("policy/v1", "PodDisruptionBudget") => unknown_in::<PodDisruptionBudget>(object)?,
        ("rbac.authorization.k8s.io/v1", "ClusterRole") => unknown_in::<ClusterRole>(object)?,
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding") => {
            unknown_in::<ClusterRoleBinding>(object)?
        }
        ("rbac.authorization.k8s.io/v1", "Role") => unknown_in::<Role>(object)?,
        ("rbac.authorization.k8s.io/v1", "RoleBinding") => unknown_in::<RoleBinding>(object)?,
        ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration") => {
            unknown_in::<MutatingWebhookConfiguration>(object)?
        }
        ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration") => {
            unknown_in::<ValidatingWebhookConfiguration>(object)?
        }
        ("apiregistration.k8s.io/v1", "APIService") => unknown_in::<APIService>(object)?,
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition") => {
            unknown_in::<CustomResourceDefinition>(object)?
        }
        ("cert-manager.io/v1", "Issuer") => {
            serde_json::from_value::<others::Object<others::IssuerSpec>>(object.clone())?;
            Vec::new()
        }
        ("cert-manager.io/v1", "Certificate") => {
            serde_json::from_value::<others::Object<others::CertificateSpec>>(object.clone())?;
            Vec::new()
        }
        ("policies.wasq.dev/v1alpha1", "QueuePolicy") => {
            match wasq::api::policy::from_object(object) {
                Ok(policy) => wasq::api::policy::validate(&policy),
                Err(problems) => problems,
            }
            .into_iter()
            .map(|p| format!("{}: {}", p.field.unwrap_or_default(), p.message))
            .collect()
        }
        ("monitoring.coreos.com/v1", "ServiceMonitor") => {
            serde_json::from_value::<others::Object<others::ServiceMonitorSpec>>(object.clone())?;
            Vec::new()
        }
        _ => bail!("{api_version} {kind}: a kind this test has no type for"),
    })
}

/// The kinds the API server serves without another operator's CRDs.
fn built_in(object: &Value) -> bool {
    let group = object["apiVersion"].as_str().unwrap_or_default();
    !["cert-manager.io/", "monitoring.coreos.com/"]
        .iter()
        .any(|g| group.starts_with(g))
}

/// The controller's arguments, as wasq parses them: run with no cluster to reach, wasq gets past
/// its arguments (a usage error exits 2) and stops where it looks for a cluster.
fn assert_wasq_takes(args: &[String], overlay: &str) {
    let empty = tempfile::tempdir().expect("tempdir");
    let out = Command::new(env!("CARGO_BIN_EXE_wasq"))
        .args(args)
        .env_clear()
        .env("HOME", empty.path())
        .env("KUBECONFIG", empty.path().join("none"))
        .output()
        .expect("wasq runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(
        out.status.code(),
        Some(2),
        "{overlay}: wasq refuses {args:?}:\n{stderr}"
    );
    assert!(
        !out.status.success(),
        "{overlay}: no cluster, yet wasq {args:?} succeeded"
    );
}

#[tokio::test]
#[ignore = "needs the control plane of .ci/build-control-plane; run with --ignored"]
async fn every_kustomization_renders_typed_objects_the_api_server_accepts() -> Result<()> {
    let kubectl = bin_dir()?.join("kubectl");
    // The check itself finds a field no type has.
    let mut typo: Value = serde_json::json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "x"}, "spec": {"replicass": 2, "selector": {}, "template": {}}});
    let found = check_typed(&typo)?;
    assert!(
        matches!(found.as_slice(), [one] if one.ends_with("replicass")),
        "{found:?}"
    );
    typo["spec"].as_object_mut().unwrap().remove("replicass");
    assert!(check_typed(&typo)?.is_empty());

    let plane = ControlPlane::start().await?;
    let version = env!("CARGO_PKG_VERSION");
    let mut base_once: Option<Vec<Value>> = None;
    for dir in kustomizations()? {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let (_, objects) = render(&kubectl, &dir)?;
        let mut kinds = Vec::new();
        for object in &objects {
            let what = format!("{name}: {} {}", object["kind"], object["metadata"]["name"]);
            let unknown = check_typed(object).with_context(|| what.clone())?;
            assert!(unknown.is_empty(), "{what}: unknown fields {unknown:?}");
            kinds.push(object["kind"].as_str().unwrap_or_default().to_string());
            if object["kind"] == "Deployment" {
                let pod = &object["spec"]["template"]["spec"];
                let container = &pod["containers"][0];
                assert_eq!(
                    container["image"],
                    format!("ghcr.io/wasq/wasq:{version}"),
                    "{what}"
                );
                assert_eq!(pod["securityContext"]["runAsNonRoot"], true, "{what}");
                assert_eq!(
                    container["securityContext"]["readOnlyRootFilesystem"], true,
                    "{what}"
                );
                let args: Vec<String> = serde_json::from_value(container["args"].clone())?;
                assert_wasq_takes(&args, &name);
            }
        }
        for expected in [
            "CustomResourceDefinition",
            "Deployment",
            "ClusterRole",
            "Service",
        ] {
            assert!(
                kinds.iter().any(|k| k == expected),
                "{name} renders no {expected}"
            );
        }
        let webhooks = kinds
            .iter()
            .filter(|k| k.ends_with("WebhookConfiguration"))
            .count();
        assert_eq!(
            webhooks,
            if name == "without-webhooks" { 0 } else { 2 },
            "{name}"
        );

        // Applied as `kubectl apply --server-side -k` would, but without the kinds of operators
        // this control plane does not run. The CRDs once, with the base (every overlay has the
        // base's), Established before deploy/policies is applied (its kind is the QueuePolicy
        // CRD's) and before the webhook configurations exist (then the API server would call
        // wasq's webhook, which nothing serves here).
        let once = |o: &Value| o["kind"] == "CustomResourceDefinition";
        let (first, rest): (Vec<Value>, Vec<Value>) = objects.into_iter().partition(once);
        assert!(
            rest.iter().all(|o| o["kind"] != "QueuePolicy"),
            "{name}: QueuePolicies belong in deploy/policies, applied once wasq runs"
        );
        match &base_once {
            None => {
                apply(&kubectl, &plane, &format!("{name}-crds"), &first)?;
                kubectl_ok(
                    &kubectl,
                    &plane,
                    &[
                        "wait",
                        "--for=condition=Established",
                        "crd",
                        "--all",
                        "--timeout=60s",
                    ],
                )?;
                // deploy/policies, as its kustomization says: once the CRDs are served (and,
                // in a cluster, wasq's webhook answers; no webhook configuration exists yet
                // here).
                let (_, policies) = render(&kubectl, &root().join("deploy/policies"))?;
                for object in &policies {
                    let problems = check_typed(object)?;
                    assert!(problems.is_empty(), "deploy/policies: {problems:?}");
                }
                apply(&kubectl, &plane, "policies", &policies)?;
                assert_policies_stored(&plane, &policies).await?;
                base_once = Some(first);
            }
            Some(base) => assert!(
                first.iter().eq(base.iter()),
                "{name} changes the base's CRDs"
            ),
        }
        apply(&kubectl, &plane, &name, &rest)?;
    }
    Ok(())
}

/// The QueuePolicies of `deploy/base/policies.yaml` as the server stores them: cluster-scoped
/// (the `namespace` kustomize gives every object is dropped), their spec as rendered.
async fn assert_policies_stored(plane: &ControlPlane, rendered: &[Value]) -> Result<()> {
    use kube::api::{Api, DynamicObject, ListParams};
    let api: Api<DynamicObject> =
        Api::all_with(plane.client().await?, &wasq::k8s::policies::resource());
    let stored = api.list(&ListParams::default()).await?.items;
    assert_eq!(stored.len(), rendered.len(), "{stored:?}");
    for policy in rendered {
        let name = policy["metadata"]["name"].as_str().unwrap_or_default();
        let object = serde_json::to_value(api.get(name).await?)?;
        assert_eq!(object["metadata"].get("namespace"), None, "{object}");
        assert_eq!(object["spec"], policy["spec"], "{name}");
    }
    Ok(())
}

/// `kubectl apply --server-side --validate=strict` of the built-in objects of `objects`.
fn apply(kubectl: &Path, plane: &ControlPlane, name: &str, objects: &[Value]) -> Result<()> {
    let file = built_in_objects_file(plane, name, objects)?;
    let file = file.to_string_lossy();
    kubectl_ok(
        kubectl,
        plane,
        &[
            "apply",
            "--server-side",
            "--validate=strict",
            "--field-manager=wasq-deploy-test",
            "-f",
            &file,
        ],
    )
    .with_context(|| format!("applying {name}"))
}

/// Runs kubectl against `plane`; its standard error when it fails.
fn kubectl_ok(kubectl: &Path, plane: &ControlPlane, args: &[&str]) -> Result<()> {
    let out = Command::new(kubectl)
        .arg("--kubeconfig")
        .arg(plane.kubeconfig())
        .args(args)
        .output()?;
    if !out.status.success() {
        bail!(
            "kubectl {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

/// The built-in objects of one rendering, written to a file in the control plane's folder.
fn built_in_objects_file(plane: &ControlPlane, name: &str, objects: &[Value]) -> Result<PathBuf> {
    let path = plane.dir().join(format!("deploy-{name}.json"));
    let list = serde_json::json!({
        "apiVersion": "v1",
        "kind": "List",
        "items": objects.iter().filter(|o| built_in(o)).collect::<Vec<_>>(),
    });
    std::fs::write(&path, serde_json::to_vec(&list)?)?;
    Ok(path)
}
