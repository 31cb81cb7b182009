//! Who may read the controller's dashboard: the caller's bearer token is reviewed by the API
//! server (TokenReview) and what its user may list is asked of it (SubjectAccessReview), as
//! kube-rbac-proxy and the API server's own delegated authorization do. A caller sees the
//! cluster-scoped parts (ClusterQueues, Cohorts, topology, policies) when it may list
//! ClusterQueues, and the LocalQueues and Workloads of the namespaces where it may list
//! Workloads. Answers are cached per token for [`CACHE_FOR`].

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec, UserInfo};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use sha2::{Digest, Sha256};

use crate::dashboard::{Access, AccessFuture, Authorize};

/// How long a token's access is remembered.
pub const CACHE_FOR: Duration = Duration::from_secs(30);
/// At most this many tokens are remembered.
const CACHE_ENTRIES: usize = 1024;
/// Namespaces asked about one by one, at most (beyond, only what a cluster-wide review allows).
const MAX_NAMESPACE_REVIEWS: usize = 200;

/// A token's access as reviewed: when, what, and the namespaces asked about.
type Reviewed = (Instant, Access, BTreeSet<String>);

/// Reviews tokens and access with the API server.
pub struct KubeAuthorizer {
    client: kube::Client,
    /// By the token's SHA-256 (the token itself is not kept).
    cache: Mutex<HashMap<[u8; 32], Reviewed>>,
}

impl KubeAuthorizer {
    pub fn new(client: kube::Client) -> KubeAuthorizer {
        KubeAuthorizer {
            client,
            cache: Mutex::new(HashMap::new()),
        }
    }

    async fn user(&self, token: &str) -> Result<UserInfo, String> {
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.to_string()),
                audiences: None,
            },
            ..TokenReview::default()
        };
        let api: Api<TokenReview> = Api::all(self.client.clone());
        let answer = api
            .create(&PostParams::default(), &review)
            .await
            .map_err(|e| format!("cannot review the token: {e}"))?;
        let status = answer.status.unwrap_or_default();
        if status.authenticated != Some(true) {
            return Err(match status.error {
                Some(e) if !e.is_empty() => format!("the token is not valid: {e}"),
                _ => "the token is not valid".to_string(),
            });
        }
        status
            .user
            .ok_or_else(|| "the token's review names no user".to_string())
    }

    /// Whether `user` may `list` `resource` (of Kueue's group) in `namespace` (all: `None`).
    async fn may_list(
        &self,
        user: &UserInfo,
        resource: &str,
        namespace: Option<&str>,
    ) -> Result<bool, String> {
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: user.username.clone(),
                groups: user.groups.clone(),
                uid: user.uid.clone(),
                extra: user.extra.clone(),
                resource_attributes: Some(ResourceAttributes {
                    group: Some("kueue.x-k8s.io".into()),
                    resource: Some(resource.into()),
                    verb: Some("list".into()),
                    namespace: namespace.map(str::to_string),
                    ..ResourceAttributes::default()
                }),
                ..SubjectAccessReviewSpec::default()
            },
            ..SubjectAccessReview::default()
        };
        let api: Api<SubjectAccessReview> = Api::all(self.client.clone());
        let answer = api
            .create(&PostParams::default(), &review)
            .await
            .map_err(|e| format!("cannot review access: {e}"))?;
        Ok(answer.status.is_some_and(|s| s.allowed))
    }

    async fn review(&self, token: &str, namespaces: &[String]) -> Result<Access, String> {
        let user = self.user(token).await?;
        let cluster = self.may_list(&user, "clusterqueues", None).await?;
        if self.may_list(&user, "workloads", None).await? {
            return Ok(Access::Scoped {
                cluster,
                namespaces: None,
            });
        }
        let mut allowed = BTreeSet::new();
        for ns in namespaces.iter().take(MAX_NAMESPACE_REVIEWS) {
            if self.may_list(&user, "workloads", Some(ns)).await? {
                allowed.insert(ns.clone());
            }
        }
        if !cluster && allowed.is_empty() {
            return Err(format!(
                "{} may not list Workloads or ClusterQueues",
                user.username.as_deref().unwrap_or("this user")
            ));
        }
        Ok(Access::Scoped {
            cluster,
            namespaces: Some(allowed),
        })
    }
}

impl Authorize for KubeAuthorizer {
    fn authorize<'a>(
        &'a self,
        token: Option<&'a str>,
        namespaces: Vec<String>,
    ) -> AccessFuture<'a> {
        Box::pin(async move {
            let Some(token) = token.filter(|t| !t.is_empty()) else {
                return Err("a bearer token is needed (Authorization: Bearer TOKEN)".to_string());
            };
            let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
            let asked: BTreeSet<String> = namespaces.iter().cloned().collect();
            if let Ok(cache) = self.cache.lock()
                && let Some((at, access, reviewed)) = cache.get(&key)
                && at.elapsed() < CACHE_FOR
                && (matches!(
                    access,
                    Access::Scoped {
                        namespaces: None,
                        ..
                    }
                ) || asked.is_subset(reviewed))
            {
                return Ok(access.clone());
            }
            let access = self.review(token, &namespaces).await?;
            if let Ok(mut cache) = self.cache.lock() {
                if cache.len() >= CACHE_ENTRIES {
                    cache.retain(|_, (at, _, _)| at.elapsed() < CACHE_FOR);
                    if cache.len() >= CACHE_ENTRIES {
                        cache.clear();
                    }
                }
                cache.insert(key, (Instant::now(), access.clone(), asked));
            }
            Ok(access)
        })
    }
}
