//! The resources the double serves ([`Resource`]), the built-in set wasq uses, and how a request
//! path names a resource, a namespace, an object and a subresource ([`Target`]).

use kube::core::ApiResource;

use crate::k8s::schema::crds;

/// One served resource (kind) of one group/version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    /// Empty for the core group (`/api/v1`).
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
    pub namespaced: bool,
    /// Whether `status` is a subresource: writes to the object then ignore `.status`, writes
    /// to `/status` change only `.status`, and `generation` counts spec changes only.
    pub status: bool,
}

impl Resource {
    pub fn new(group: &str, version: &str, kind: &str, plural: &str, namespaced: bool) -> Self {
        Resource {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            plural: plural.into(),
            namespaced,
            status: false,
        }
    }

    /// The same resource with a `status` subresource.
    pub fn with_status(mut self) -> Self {
        self.status = true;
        self
    }

    /// A resource from kube's [`ApiResource`] (`namespaced` must be given: kube does not know).
    pub fn from_api_resource(ar: &ApiResource, namespaced: bool) -> Self {
        Resource::new(&ar.group, &ar.version, &ar.kind, &ar.plural, namespaced)
    }

    /// `group/version`, or `version` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// Whether the kind is one of Kubernetes' own (the core group, `apps`, `batch`, the
    /// `*.k8s.io` groups) rather than a custom resource (`*.x-k8s.io` — SIG projects' CRDs
    /// such as Kueue's — or any other group with a dot). The API server lists a built-in
    /// kind's items without their `apiVersion` and `kind` (the list carries them); a custom
    /// resource's items keep theirs.
    pub fn is_builtin(&self) -> bool {
        !self.group.contains('.')
            || (self.group.ends_with(".k8s.io") && !self.group.ends_with(".x-k8s.io"))
    }

    /// `plural.group` (or `plural` in the core group), as the API server names it in messages.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// The collection path prefix: `/api/v1` or `/apis/{group}/{version}`.
    pub fn prefix(&self) -> String {
        if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        }
    }
}

/// The resources wasq reads and writes: the core ones (namespaces, pods, nodes, Events,
/// Secrets, PodTemplates), `events.k8s.io/v1` Events, `batch/v1` Jobs, Leases, the admission webhook
/// configurations and Kueue's CRDs (`v1beta2`). ProvisioningRequests are not among them, so that
/// discovery says they are not served until a test registers them. Made once per process
/// (the CRDs' schemas take a while to generate): a test starts several doubles.
pub fn builtin() -> Vec<Resource> {
    static BUILTIN: std::sync::OnceLock<Vec<Resource>> = std::sync::OnceLock::new();
    BUILTIN.get_or_init(make_builtin).clone()
}

fn make_builtin() -> Vec<Resource> {
    let mut out = vec![
        Resource::new("", "v1", "Namespace", "namespaces", false).with_status(),
        Resource::new("", "v1", "Pod", "pods", true).with_status(),
        Resource::new("", "v1", "Node", "nodes", false).with_status(),
        Resource::new("", "v1", "Event", "events", true),
        Resource::new("", "v1", "Secret", "secrets", true),
        Resource::new("", "v1", "ConfigMap", "configmaps", true),
        Resource::new("", "v1", "PodTemplate", "podtemplates", true),
        Resource::new("events.k8s.io", "v1", "Event", "events", true),
        Resource::new("batch", "v1", "Job", "jobs", true).with_status(),
        Resource::new("coordination.k8s.io", "v1", "Lease", "leases", true),
        Resource::new(
            "admissionregistration.k8s.io",
            "v1",
            "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations",
            false,
        ),
        Resource::new(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
            false,
        ),
    ];
    for crd in crds::crds() {
        let spec = &crd.spec;
        let Some(version) = spec.versions.iter().find(|v| v.storage) else {
            continue;
        };
        let mut r = Resource::new(
            &spec.group,
            &version.name,
            &spec.names.kind,
            &spec.names.plural,
            spec.scope == "Namespaced",
        );
        r.status = version
            .subresources
            .as_ref()
            .is_some_and(|s| s.status.is_some());
        out.push(r);
    }
    out
}

/// What a request path addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `/api` (core versions).
    CoreVersions,
    /// `/apis` (groups).
    Groups,
    /// `/api/v1` or `/apis/{group}/{version}`: the group version's resource list.
    GroupVersion { group: String, version: String },
    /// A collection or an object of a resource.
    Object {
        /// Index into the registry.
        resource: usize,
        namespace: Option<String>,
        name: Option<String>,
        subresource: Option<String>,
    },
}

/// The path's target among `resources`, or `None` (404) when it names nothing served.
pub fn parse(resources: &[Resource], path: &str) -> Option<Target> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, rest) = match segs.as_slice() {
        ["api"] => return Some(Target::CoreVersions),
        ["apis"] => return Some(Target::Groups),
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return None,
    };
    if rest.is_empty() {
        return Some(Target::GroupVersion {
            group: group.into(),
            version: version.into(),
        });
    }
    let find = |plural: &str, namespaced: bool| {
        resources.iter().position(|r| {
            r.group == group
                && r.version == version
                && r.plural == plural
                && r.namespaced == namespaced
        })
    };
    // `namespaces/{ns}/{plural}/...` when `{plural}` is a namespaced resource; otherwise the
    // first segment is a cluster-scoped resource (among them `namespaces` itself).
    if let ["namespaces", ns, plural, tail @ ..] = rest
        && let Some(resource) = find(plural, true)
    {
        return object(resource, Some(ns), tail);
    }
    let (plural, tail) = rest.split_first()?;
    if let Some(resource) = find(plural, false) {
        return object(resource, None, tail);
    }
    // A namespaced resource listed across namespaces: `/apis/g/v/{plural}`.
    let resource = find(plural, true)?;
    tail.is_empty().then_some(Target::Object {
        resource,
        namespace: None,
        name: None,
        subresource: None,
    })
}

fn object(resource: usize, namespace: Option<&str>, tail: &[&str]) -> Option<Target> {
    let (name, subresource) = match tail {
        [] => (None, None),
        [name] => (Some(*name), None),
        [name, sub] => (Some(*name), Some(*sub)),
        _ => return None,
    };
    Some(Target::Object {
        resource,
        namespace: namespace.map(str::to_string),
        name: name.map(str::to_string),
        subresource: subresource.map(str::to_string),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_collections_objects_and_subresources() {
        let rs = builtin();
        let idx = |plural: &str, group: &str| {
            rs.iter()
                .position(|r| r.plural == plural && r.group == group)
                .unwrap()
        };
        let ns = idx("namespaces", "");
        assert_eq!(
            parse(&rs, "/api/v1/namespaces/foo"),
            Some(Target::Object {
                resource: ns,
                namespace: None,
                name: Some("foo".into()),
                subresource: None
            })
        );
        assert_eq!(
            parse(&rs, "/api/v1/namespaces/foo/status"),
            Some(Target::Object {
                resource: ns,
                namespace: None,
                name: Some("foo".into()),
                subresource: Some("status".into())
            })
        );
        let wl = idx("workloads", "kueue.x-k8s.io");
        assert_eq!(
            parse(
                &rs,
                "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/w/status"
            ),
            Some(Target::Object {
                resource: wl,
                namespace: Some("ns".into()),
                name: Some("w".into()),
                subresource: Some("status".into())
            })
        );
        assert_eq!(
            parse(&rs, "/apis/kueue.x-k8s.io/v1beta2/workloads"),
            Some(Target::Object {
                resource: wl,
                namespace: None,
                name: None,
                subresource: None
            })
        );
        assert_eq!(parse(&rs, "/apis/nope.io/v1/things"), None);
        assert_eq!(
            parse(&rs, "/apis/batch/v1"),
            Some(Target::GroupVersion {
                group: "batch".into(),
                version: "v1".into()
            })
        );
    }
}
