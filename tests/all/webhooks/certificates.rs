//! The webhook certificate against the API server double: the shared Secret created, read,
//! raced for and rotated; the CA bundle written; mounted certificates; start-up failures.

use super::*;

const SECRET_PATH: &str = "/api/v1/namespaces/wasq-system/secrets/wasq-webhook-server-cert";
const MUTATING_PATH: &str = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/wasq-mutating-webhook-configuration";
const VALIDATING_PATH: &str = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/wasq-validating-webhook-configuration";

fn configurations(api: &ApiServer) {
    for (path, kind, name) in [
        (
            MUTATING_PATH,
            "MutatingWebhookConfiguration",
            webhook::MUTATING_CONFIGURATION,
        ),
        (
            VALIDATING_PATH,
            "ValidatingWebhookConfiguration",
            webhook::VALIDATING_CONFIGURATION,
        ),
    ] {
        let hook = |n: &str| {
            json!({"name": n, "admissionReviewVersions": ["v1"], "sideEffects": "None",
            "clientConfig": {"service": {"name": SERVICE, "namespace": NS, "path": "/x"}}})
        };
        api.put(
            path,
            json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
                   "metadata": {"name": name}, "webhooks": [hook("a.kb.io"), hook("b.kb.io")]}),
        );
    }
}

fn settings() -> CertSource {
    CertSource::Secret(SecretSettings::new(NS, webhook::DEFAULT_SECRET, SERVICE))
}

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

fn stored_certs(api: &ApiServer) -> Certs {
    let secret = api.get(SECRET_PATH).expect("the Secret exists");
    assert_eq!(secret["type"], "kubernetes.io/tls");
    let field = |k: &str| {
        let b = base64::engine::general_purpose::STANDARD
            .decode(secret["data"][k].as_str().unwrap())
            .unwrap();
        String::from_utf8(b).unwrap()
    };
    Certs {
        ca_pem: field("ca.crt"),
        ca_key_pem: field("ca.key"),
        cert_pem: field("tls.crt"),
        key_pem: field("tls.key"),
    }
}

fn bundles(api: &ApiServer) -> Vec<Value> {
    [MUTATING_PATH, VALIDATING_PATH]
        .into_iter()
        .flat_map(|p| {
            api.get(p).unwrap()["webhooks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|w| w["clientConfig"]["caBundle"].clone())
                .collect::<Vec<_>>()
        })
        .collect()
}

fn secret_writes(api: &ApiServer) -> Vec<String> {
    api.requests()
        .iter()
        .filter(|r| r.uri.contains("/secrets") && r.method != "GET")
        .map(|r| r.line())
        .collect()
}

#[tokio::test]
async fn the_first_replica_creates_the_secret_and_writes_both_ca_bundles_and_the_second_serves_the_same()
 {
    let api = double();
    configurations(&api);
    let client = api.client();
    let first = provision::obtain(&client, &settings()).await.unwrap();
    assert_eq!(
        secret_writes(&api),
        ["POST /api/v1/namespaces/wasq-system/secrets"]
    );
    assert_eq!(stored_certs(&api), first);
    assert_eq!(bundles(&api), vec![json!(b64(&first.ca_pem)); 4]);
    let manager = api
        .requests()
        .into_iter()
        .filter(|r| r.method == "PATCH")
        .map(|r| r.uri)
        .collect::<Vec<_>>();
    assert_eq!(manager.len(), 2, "one patch per configuration: {manager:?}");
    assert!(
        manager
            .iter()
            .all(|u| u.contains("fieldManager=wasq-cert-controller"))
    );

    api.clear_requests();
    let second = provision::obtain(&client, &settings()).await.unwrap();
    assert_eq!(second, first, "the second replica reads the same Secret");
    assert!(secret_writes(&api).is_empty(), "{:?}", secret_writes(&api));
    assert!(
        api.requests().iter().all(|r| r.method == "GET"),
        "bundles already written"
    );
    // And serves it: a client trusting the CA of the Secret verifies the served certificate.
    let server = start_with(webhooks_with(View::default()), &second).await;
    let obj = job("pi", json!({"kueue.x-k8s.io/queue-name": "lq"}), None);
    let r = server
        .review(
            "/mutate-batch-v1-job",
            request("CREATE", JOB, "jobs", &obj, None),
        )
        .await;
    assert_eq!(r["allowed"], true);
}

#[tokio::test]
async fn a_replica_that_loses_the_race_to_create_reads_the_winners_secret() {
    let api = double();
    configurations(&api);
    let names = certs::dns_names(SERVICE, NS);
    let winner = certs::generate(&names, NOW - 60, now_secs() + VALIDITY_SECS).unwrap();
    put_secret(&api, &winner);
    // This replica's read came before the winner's create.
    api.fail_next("GET", "/secrets/wasq-webhook-server-cert", 404);
    let got = provision::obtain(&api.client(), &settings()).await.unwrap();
    assert_eq!(got, winner);
    let lines: Vec<String> = api
        .requests()
        .iter()
        .filter(|r| r.uri.contains("/secrets"))
        .map(|r| r.line())
        .collect();
    assert_eq!(
        lines,
        [
            format!("GET {SECRET_PATH}"),
            "POST /api/v1/namespaces/wasq-system/secrets".to_string(),
            format!("GET {SECRET_PATH}"),
        ]
    );
    assert_eq!(stored_certs(&api), winner);
}

fn put_secret(api: &ApiServer, c: &Certs) {
    api.put(
        SECRET_PATH,
        json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
               "metadata": {"name": webhook::DEFAULT_SECRET, "namespace": NS},
               "data": {"ca.crt": b64(&c.ca_pem), "ca.key": b64(&c.ca_key_pem),
                        "tls.crt": b64(&c.cert_pem), "tls.key": b64(&c.key_pem)}}),
    );
}

/// Runs `obtain` over a Secret holding `old`; returns what it serves and checks the Secret was
/// written only over the version read.
async fn rotate(old: &Certs) -> (ApiServer, Certs) {
    let api = double();
    configurations(&api);
    put_secret(&api, old);
    let rv = api.get(SECRET_PATH).unwrap()["metadata"]["resourceVersion"].clone();
    let new = provision::obtain(&api.client(), &settings()).await.unwrap();
    let names = certs::dns_names(SERVICE, NS);
    assert_ne!(new.cert_pem, old.cert_pem);
    assert_eq!(
        new.fitness(&names, now_secs(), LOOKAHEAD_SECS),
        certs::Fitness::Fit
    );
    assert_eq!(stored_certs(&api), new);
    let patch = api
        .requests()
        .into_iter()
        .find(|r| r.method == "PATCH" && r.uri.contains("/secrets/"))
        .expect("the Secret is updated");
    assert_eq!(
        patch.body["metadata"]["resourceVersion"], rv,
        "written only over the version read"
    );
    (api, new)
}

#[tokio::test]
async fn an_expiring_serving_certificate_is_signed_again_by_the_kept_ca() {
    let names = certs::dns_names(SERVICE, NS);
    let now = now_secs();
    let old = certs::generate(&names, now - 3600, now + VALIDITY_SECS)
        .unwrap()
        .resigned(&names, now - 3600, now + LOOKAHEAD_SECS / 2)
        .unwrap();
    let (api, new) = rotate(&old).await;
    assert_eq!(new.ca_pem, old.ca_pem, "the CA the API server trusts stays");
    assert_eq!(bundles(&api), vec![json!(b64(&old.ca_pem)); 4]);
}

#[tokio::test]
async fn an_expiring_ca_is_replaced_and_the_new_bundle_written() {
    let names = certs::dns_names(SERVICE, NS);
    let now = now_secs();
    let old = certs::generate(&names, now - 3600, now + LOOKAHEAD_SECS / 2).unwrap();
    let (api, new) = rotate(&old).await;
    assert_ne!(new.ca_pem, old.ca_pem);
    assert_eq!(bundles(&api), vec![json!(b64(&new.ca_pem)); 4]);
}

#[tokio::test]
async fn a_certificate_for_another_service_name_is_signed_again() {
    let now = now_secs();
    let other = certs::dns_names("old-name", NS);
    let old = certs::generate(&other, now - 3600, now + VALIDITY_SECS).unwrap();
    let (_, new) = rotate(&old).await;
    assert_eq!(new.ca_pem, old.ca_pem);
}

#[tokio::test]
async fn start_up_failures_name_the_address_or_the_secret_and_the_rbac_verb() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let api = double();
    let e = webhook::start(
        api.client(),
        Arc::new(webhooks_with(View::default())),
        addr,
        settings(),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(
        e.starts_with(&format!("cannot listen on {addr} for the webhooks (")),
        "{e}"
    );
    assert!(
        e.ends_with("choose another address with --webhook-listen, or run with --no-webhooks"),
        "{e}"
    );

    api.fail_next("GET", "/secrets/wasq-webhook-server-cert", 403);
    let e = webhook::start(
        api.client(),
        Arc::new(webhooks_with(View::default())),
        "127.0.0.1:0".parse().unwrap(),
        settings(),
    )
    .await
    .unwrap_err()
    .to_string();
    assert_eq!(
        e,
        "cannot get Secret wasq-system/wasq-webhook-server-cert: forbidden; wasq's ServiceAccount \
         needs the RBAC verb \"get\" on it (see deploy/base)"
    );
}

#[test]
fn readyz_waits_for_the_webhooks() {
    let shared = RwLock::new(Shared {
        ready: true,
        webhooks_pending: true,
        ..Shared::default()
    });
    let metrics = Metrics::new("standalone");
    let (status, _, body) = wasq::k8s::serve::http::route("/readyz", "", &shared, &metrics);
    assert_eq!(
        (status.as_u16(), body.as_str()),
        (503, "waiting for the webhook certificate")
    );
    shared.write().unwrap().webhooks_pending = false;
    let (status, _, _) = wasq::k8s::serve::http::route("/readyz", "", &shared, &metrics);
    assert_eq!(status.as_u16(), 200);
}

#[tokio::test]
async fn mounted_certificates_are_served_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let now = now_secs();
    let c = certs::generate(&certs::dns_names(SERVICE, NS), now - 60, now + 3600).unwrap();
    for (file, text) in [
        ("ca.crt", &c.ca_pem),
        ("tls.crt", &c.cert_pem),
        ("tls.key", &c.key_pem),
    ] {
        std::fs::write(dir.path().join(file), text).unwrap();
    }
    let api = double();
    let (addr, _) = webhook::start(
        api.client(),
        Arc::new(webhooks_with(View::default())),
        "127.0.0.1:0".parse().unwrap(),
        CertSource::Dir(dir.path().to_path_buf()),
    )
    .await
    .unwrap();
    let server = Server {
        addr,
        ca_pem: c.ca_pem.clone(),
    };
    let obj = job("pi", json!({"kueue.x-k8s.io/queue-name": "lq"}), None);
    let r = server
        .review(
            "/mutate-batch-v1-job",
            request("CREATE", JOB, "jobs", &obj, None),
        )
        .await;
    assert_eq!(admitted(&obj, &r)["spec"]["suspend"], true);
    assert!(api.requests().is_empty(), "{:?}", api.requests());
}
