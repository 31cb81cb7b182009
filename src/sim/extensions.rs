//! `sim.wasq.dev/v1alpha1` objects in manifests: `Trace` (a JSONL or CSV file of workloads)
//! and `Generator` (one of Kueue's performance-test shapes). Both expand into ordinary objects.

use crate::api::Manifests;

/// Replaces every simulator extension object with the objects it stands for.
pub fn expand(manifests: &mut Manifests) -> Result<(), String> {
    let extensions = std::mem::take(&mut manifests.extensions);
    let mut errors = Vec::new();
    for ext in extensions {
        errors.push(format!(
            "{} doc {}: {} is not supported yet",
            ext.origin.file.display(),
            ext.origin.doc,
            ext.kind
        ));
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("\n"))
    }
}
