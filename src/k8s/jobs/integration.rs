//! The controller's side of the job kinds of [`crate::api::jobs`] (the one generic mechanism
//! both drivers use): the API resource a kind is watched and patched through, and which kinds
//! the job reconciler runs itself. Kinds without a suspend flag (LeaderWorkerSet,
//! StatefulSet, Deployment) are left to pod gating: their pods carry the queue label and are
//! held by the `kueue.x-k8s.io/admission` scheduling gate as pod groups.

use kube::core::ApiResource;

use crate::api::jobs::JobKind;

/// The API resource of a job kind.
pub fn api_resource(kind: &JobKind) -> ApiResource {
    ApiResource {
        group: kind.group.clone(),
        version: kind.version.clone(),
        api_version: kind.spec.api_version.clone(),
        kind: kind.spec.kind.clone(),
        plural: kind.spec.plural.clone(),
    }
}

/// Whether the job reconciler suspends and starts jobs of this kind itself.
pub fn reconciled(kind: &JobKind) -> bool {
    kind.has_suspend()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_split_group_and_version() {
        let kinds = crate::api::jobs::builtin();
        let pytorch = kinds.iter().find(|k| k.spec.kind == "PyTorchJob").unwrap();
        let ar = api_resource(pytorch);
        assert_eq!(
            (ar.group.as_str(), ar.version.as_str(), ar.plural.as_str()),
            ("kubeflow.org", "v1", "pytorchjobs")
        );
        let lws = kinds
            .iter()
            .find(|k| k.spec.kind == "LeaderWorkerSet")
            .unwrap();
        assert!(!reconciled(lws));
    }
}
