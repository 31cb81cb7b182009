//! Cost attribution: a configured list of LocalQueue label keys (e.g. `team`, `cost-center`)
//! is copied onto each Workload of that LocalQueue and, at admission, into the job's pod
//! templates, so that tools reading pod labels (OpenCost, Kubecost) attribute usage per team.
//! Both drivers call these; labels the Workload or template already carries are kept.

use std::collections::BTreeMap;

use crate::api::types::Workload;

/// Copies the `keys` labels of the Workload's LocalQueue (`queue_labels`) onto the Workload.
/// A label the Workload already has keeps its value.
pub fn copy_local_queue_labels(
    wl: &mut Workload,
    queue_labels: Option<&BTreeMap<String, String>>,
    keys: &[String],
) {
    let Some(queue_labels) = queue_labels else {
        return;
    };
    for key in keys {
        if let Some(value) = queue_labels.get(key) {
            let labels = wl.metadata.labels.get_or_insert_with(BTreeMap::new);
            labels.entry(key.clone()).or_insert_with(|| value.clone());
        }
    }
}

/// The Workload's labels among `keys`: what admission adds to the job's pod templates.
pub fn attribution_labels(wl: &Workload, keys: &[String]) -> BTreeMap<String, String> {
    let Some(labels) = &wl.metadata.labels else {
        return BTreeMap::new();
    };
    keys.iter()
        .filter_map(|k| labels.get(k).map(|v| (k.clone(), v.clone())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_configured_keys_are_copied_and_existing_labels_win() {
        let mut wl = Workload::default();
        wl.metadata.labels = Some(BTreeMap::from([("team".into(), "mine".into())]));
        let lq = BTreeMap::from([
            ("team".to_string(), "vision".to_string()),
            ("cost-center".to_string(), "cc-42".to_string()),
            ("other".to_string(), "x".to_string()),
        ]);
        let keys = vec!["team".to_string(), "cost-center".to_string()];
        copy_local_queue_labels(&mut wl, Some(&lq), &keys);
        let labels = wl.metadata.labels.clone().unwrap();
        assert_eq!(labels.get("team").map(String::as_str), Some("mine"));
        assert_eq!(labels.get("cost-center").map(String::as_str), Some("cc-42"));
        assert!(!labels.contains_key("other"));
        assert_eq!(attribution_labels(&wl, &keys).len(), 2);
    }
}
