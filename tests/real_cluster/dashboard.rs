//! The controller's dashboard with `--dashboard-auth kubernetes` against the real API server:
//! a request without a token, or with one the server does not know, is refused; a service
//! account that may list Workloads in one namespace sees that namespace's LocalQueues and
//! Workloads and nothing cluster-scoped; the administrator sees everything. The reviews are the
//! API server's own (TokenReview, SubjectAccessReview under RBAC), which the in-process double
//! does not serve.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::cluster::free_port;
use crate::jobs::{cluster_queue, kwok_flavor, set_up_on};
use crate::wasq::Options;

/// Two namespaces with a LocalQueue and a Workload each, and a service account that may list
/// Workloads and LocalQueues in the first only.
const OBJECTS: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-b}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: viewer, namespace: team-a}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: kueue-viewer, namespace: team-a}
rules:
- apiGroups: [kueue.x-k8s.io]
  resources: [workloads, localqueues]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: viewer, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: kueue-viewer}
subjects:
- {kind: ServiceAccount, name: viewer, namespace: team-a}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: team-a, name: queue}
spec: {clusterQueue: cluster-queue}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: team-b, name: queue}
spec: {clusterQueue: cluster-queue}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {namespace: team-a, name: train-a}
spec:
  queueName: queue
  podSets:
  - name: main
    count: 1
    template:
      spec:
        restartPolicy: Never
        containers:
        - {name: c, image: pause, resources: {requests: {cpu: "1"}}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {namespace: team-b, name: train-b}
spec:
  queueName: queue
  podSets:
  - name: main
    count: 1
    template:
      spec:
        restartPolicy: Never
        containers:
        - {name: c, image: pause, resources: {requests: {cpu: "1"}}}
"#;

/// `GET path` on the dashboard, with `token` as bearer: status and body.
fn get(port: u16, path: &str, token: Option<&str>) -> Result<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(20)))?;
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n{auth}\r\n")?;
    let mut answer = String::new();
    s.read_to_string(&mut answer)?;
    let code = answer
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .context("a status")?;
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    Ok((code, body.to_string()))
}

fn names(view: &Value, list: &str) -> Vec<String> {
    view[list]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|o| {
                    let ns = o["namespace"].as_str().map(|n| format!("{n}/"));
                    format!(
                        "{}{}",
                        ns.unwrap_or_default(),
                        o["name"].as_str().unwrap_or_default()
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
#[ignore = "needs the control plane of .ci/build-control-plane"]
async fn each_caller_sees_what_its_token_may_list() -> Result<()> {
    let port = free_port()?;
    let options = Options {
        extra_args: vec![
            format!("--dashboard-listen=127.0.0.1:{port}"),
            "--dashboard-auth=kubernetes".into(),
        ],
        ..Options::new("wasq-0")
    };
    let (plane, _client, mut wasq) = set_up_on(
        &options,
        &[],
        None,
        &[kwok_flavor(), cluster_queue(4, None)],
    )
    .await?;
    plane.kubectl(&["apply", "-f", "-"], Some(OBJECTS))?;
    let admin = std::fs::read_to_string(plane.dir().join("tokens.csv"))?
        .split(',')
        .next()
        .context("the administrator's token")?
        .to_string();
    let viewer = plane
        .kubectl(&["create", "token", "viewer", "-n", "team-a"], None)?
        .trim()
        .to_string();

    // The administrator (system:masters) sees both Workloads once they are admitted.
    let started = Instant::now();
    let everything: Value = loop {
        let (code, body) = get(port, "/api/view", Some(&admin))?;
        if code == 200 {
            let v: Value = serde_json::from_str(&body)?;
            let admitted = v["workloads"]
                .as_array()
                .is_some_and(|w| w.len() == 2 && w.iter().all(|w| w["state"] == "Admitted"));
            if admitted {
                break v;
            }
        }
        wasq.still_running()?;
        if started.elapsed() > Duration::from_secs(60) {
            bail!(
                "the dashboard never showed both Workloads: {code} {body}\n{}",
                wasq.log_tail()
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert_eq!(names(&everything, "clusterQueues"), ["cluster-queue"]);
    assert_eq!(
        names(&everything, "localQueues"),
        ["team-a/queue", "team-b/queue"]
    );

    // No token, or a token the API server does not know: refused.
    let (code, body) = get(port, "/api/view", None)?;
    assert_eq!(code, 401, "{body}");
    assert!(body.contains("a bearer token is needed"), "{body}");
    let (code, body) = get(port, "/api/view", Some("not-a-token"))?;
    assert_eq!(code, 401, "{body}");
    assert!(body.starts_with("the token is not valid"), "{body}");
    // The page itself is served to anyone: it asks for a token.
    assert_eq!(get(port, "/", None)?.0, 200);

    // The service account sees its namespace only, and nothing cluster-scoped.
    let (code, body) = get(port, "/api/view", Some(&viewer))?;
    assert_eq!(code, 200, "{body}");
    let mine: Value = serde_json::from_str(&body)?;
    assert_eq!(names(&mine, "workloads"), ["team-a/train-a"]);
    assert_eq!(names(&mine, "localQueues"), ["team-a/queue"]);
    assert!(names(&mine, "clusterQueues").is_empty());
    assert!(mine["policies"].as_array().is_some_and(Vec::is_empty));
    let (code, _) = get(port, "/api/workloads/team-a/train-a", Some(&viewer))?;
    assert_eq!(code, 200);
    let (code, body) = get(port, "/api/workloads/team-b/train-b", Some(&viewer))?;
    assert_eq!(code, 403, "{body}");
    // The events stream is filtered alike.
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(20)))?;
    write!(
        s,
        "GET /api/events HTTP/1.0\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {viewer}\r\n\r\n"
    )?;
    let mut seen = String::new();
    let mut buf = [0u8; 4096];
    let whole = |s: &str| {
        s.split_once("data: ")
            .is_some_and(|(_, rest)| rest.contains("\n\n"))
    };
    while !whole(&seen) {
        let n = s.read(&mut buf)?;
        if n == 0 {
            break;
        }
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    let data = seen
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .context("a view event")?;
    let streamed: Value = serde_json::from_str(data)?;
    assert_eq!(names(&streamed, "workloads"), ["team-a/train-a"]);
    Ok(())
}
