//! Kueue's Workload names for jobs (`jobframework/workload_names.go`):
//! `<kind in lower case>-<owner name>`, cut to leave room for `-` and a 5-character hash, then
//! `-` and the first 5 hex digits of SHA-1 over kind, group, owner name and UID (each separated
//! by a newline). The hash keeps two kinds with the same job name apart, and a re-created job
//! (new UID) from adopting its predecessor's Workload.

use sha1::{Digest, Sha1};

/// Kueue's `hashLength`.
const HASH_LENGTH: usize = 5;
/// Kueue's maximum Workload name length (without the `ShortWorkloadNames` feature gate).
pub const MAX_NAME_LENGTH: usize = 253;
/// The maximum with `ShortWorkloadNames`: a label value's limit, for names that are also the
/// `kueue.x-k8s.io/pod-group-name` label of the pods (StatefulSet, LeaderWorkerSet groups).
pub const LABEL_NAME_LENGTH: usize = 63;

/// The Workload name Kueue gives the job `owner_name` (UID `owner_uid`) of `kind` in API group
/// `group` (`""` for the core group). `prefix` is the kind in lower case unless configured.
pub fn workload_name(
    prefix: &str,
    kind: &str,
    group: &str,
    owner_name: &str,
    owner_uid: &str,
) -> String {
    workload_name_within(MAX_NAME_LENGTH, prefix, kind, group, owner_name, owner_uid)
}

/// [`workload_name`] cut to at most `max` characters (the hash kept whole).
pub fn workload_name_within(
    max: usize,
    prefix: &str,
    kind: &str,
    group: &str,
    owner_name: &str,
    owner_uid: &str,
) -> String {
    let mut head = format!("{prefix}-{owner_name}");
    let max_prefix = max - 1 - HASH_LENGTH;
    if head.len() > max_prefix {
        let mut cut = max_prefix;
        while !head.is_char_boundary(cut) {
            cut -= 1;
        }
        head.truncate(cut);
    }
    let mut hasher = Sha1::new();
    for (i, part) in [kind, group, owner_name, owner_uid].iter().enumerate() {
        if i > 0 {
            hasher.update(b"\n");
        }
        hasher.update(part.as_bytes());
    }
    let digest = hasher.finalize();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("{head}-{}", &hex[..HASH_LENGTH])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_kueues_hash() {
        // sha1("Job\nbatch\npi\nuid-pi") starts with the digits below (computed independently).
        assert_eq!(
            workload_name("job", "Job", "batch", "pi", "uid-pi"),
            format!("job-pi-{}", EXPECTED_PI)
        );
        assert_ne!(
            workload_name("job", "Job", "batch", "pi", "other-uid"),
            workload_name("job", "Job", "batch", "pi", "uid-pi")
        );
    }

    #[test]
    fn long_names_are_cut_to_253_characters() {
        let long = "x".repeat(300);
        let name = workload_name("job", "Job", "batch", &long, "");
        assert_eq!(name.len(), 253);
        assert!(name.starts_with("job-xxx"));
        let short = workload_name_within(LABEL_NAME_LENGTH, "job", "Job", "batch", &long, "");
        assert_eq!(short.len(), 63);
        assert_eq!(&short[58..], &name[248..], "the same hash");
    }

    const EXPECTED_PI: &str = "2b317";
}
