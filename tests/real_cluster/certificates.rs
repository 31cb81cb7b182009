//! wasq's own webhook certificate against the real server, as a cluster runs it: the two webhook
//! configurations of `deploy/base/webhooks.yaml` applied as they are (calling the Service
//! `wasq-webhook-service`), then a replica started without `--webhook-cert-dir` creates the
//! `kubernetes.io/tls` Secret and writes its CA as every webhook's `caBundle` — kept by the
//! server — and a second replica serves the same certificate, writing nothing. (No call is
//! made: no Service routes to a process on loopback; [`crate::jobs`] has the calls.)

use anyhow::{Context, Result};
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use kube::discovery::ApiResource;

use crate::cluster::ControlPlane;
use crate::crds::MANAGER;
use crate::wasq::{NAMESPACE, Options, Wasq, deploy_manifest};

/// The caBundle of every webhook of both configurations.
async fn bundles(client: &kube::Client) -> Result<Vec<Option<Vec<u8>>>> {
    let mutating = Api::<MutatingWebhookConfiguration>::all(client.clone())
        .get(wasq::k8s::serve::webhook::MUTATING_CONFIGURATION)
        .await?;
    let validating = Api::<ValidatingWebhookConfiguration>::all(client.clone())
        .get(wasq::k8s::serve::webhook::VALIDATING_CONFIGURATION)
        .await?;
    let mut out: Vec<Option<Vec<u8>>> = mutating
        .webhooks
        .unwrap_or_default()
        .into_iter()
        .map(|w| w.client_config.ca_bundle.map(|b| b.0))
        .collect();
    out.extend(
        validating
            .webhooks
            .unwrap_or_default()
            .into_iter()
            .map(|w| w.client_config.ca_bundle.map(|b| b.0)),
    );
    Ok(out)
}

#[tokio::test]
#[ignore = "needs the control plane of .ci/build-control-plane; run with --ignored"]
async fn wasq_keeps_its_certificate_in_a_secret_and_the_ca_bundles() -> Result<()> {
    let plane = ControlPlane::start().await?;
    let client = plane.client().await?;
    crate::crds::install(&client).await?;
    // As `kubectl apply --server-side -k deploy/base` would, for these two.
    for doc in deploy_manifest()? {
        let kind = doc["kind"].as_str().unwrap_or_default();
        if !kind.ends_with("WebhookConfiguration") {
            continue;
        }
        let gvk = GroupVersionKind::gvk("admissionregistration.k8s.io", "v1", kind);
        let resource = ApiResource::from_gvk(&gvk);
        let name = doc["metadata"]["name"].as_str().unwrap_or_default();
        Api::<DynamicObject>::all_with(client.clone(), &resource)
            .patch(name, &PatchParams::apply(MANAGER), &Patch::Apply(&doc))
            .await
            .with_context(|| format!("applying {kind} {name}"))?;
    }
    assert!(bundles(&client).await?.iter().all(Option::is_none));

    let own = |identity: &str| Options {
        own_certificate: true,
        ..Options::new(identity)
    };
    let mut first = Wasq::start(&plane, &own("wasq-a")).await?;
    // Ready only once the certificate is kept and the bundles written.
    first.wait_ready().await?;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NAMESPACE);
    let secret = secrets
        .get(wasq::k8s::serve::webhook::DEFAULT_SECRET)
        .await?;
    assert_eq!(secret.type_.as_deref(), Some("kubernetes.io/tls"));
    let data = secret.data.clone().unwrap_or_default();
    for key in ["ca.crt", "ca.key", "tls.crt", "tls.key"] {
        assert!(
            data.get(key).is_some_and(|v| !v.0.is_empty()),
            "the Secret holds {key}"
        );
    }
    let ca = data["ca.crt"].0.clone();
    let written = bundles(&client).await?;
    assert!(
        written.len() > 10 && written.iter().all(|b| b.as_deref() == Some(&ca[..])),
        "every webhook's caBundle is the Secret's CA"
    );

    let mut second = Wasq::start(&plane, &own("wasq-b")).await?;
    second.wait_ready().await?;
    let again = secrets
        .get(wasq::k8s::serve::webhook::DEFAULT_SECRET)
        .await?;
    assert_eq!(
        again.metadata.resource_version, secret.metadata.resource_version,
        "the second replica serves the kept certificate"
    );
    assert_eq!(bundles(&client).await?, written);
    for replica in [&first, &second] {
        assert_eq!(replica.warnings(), Vec::<String>::new());
    }
    Ok(())
}
