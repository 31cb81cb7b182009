//! Drops the fields a structural schema does not declare, as the API server prunes objects of a
//! CRD. Objects read from a cluster whose CRDs are Kueue's own (which know fields wasq does not
//! model) still decode with wasq's strict types.

use serde_json::Value;

/// Removes from `value` every field `schema` does not declare (recursively), except under
/// `x-kubernetes-preserve-unknown-fields` and `metadata`.
pub fn prune(value: &mut Value, schema: &Value) {
    if schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
        return;
    }
    match value {
        Value::Object(map) => {
            if let Some(Value::Object(props)) = schema.get("properties") {
                map.retain(|k, _| props.contains_key(k));
                for (k, v) in map.iter_mut() {
                    if k == "metadata" {
                        continue;
                    }
                    if let Some(s) = props.get(k) {
                        prune(v, s);
                    }
                }
            } else if let Some(s @ Value::Object(_)) = schema.get("additionalProperties") {
                for v in map.values_mut() {
                    prune(v, s);
                }
            }
        }
        Value::Array(items) => {
            if let Some(s) = schema.get("items") {
                for v in items {
                    prune(v, s);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_fields_go_known_and_preserved_ones_stay() {
        let schema = json!({"properties": {
            "spec": {"properties": {"a": {"type": "string"}, "any": {"x-kubernetes-preserve-unknown-fields": true}}},
            "list": {"items": {"properties": {"n": {"type": "string"}}}},
            "metadata": {"type": "object"}
        }});
        let mut v = json!({
            "spec": {"a": "x", "b": 1, "any": {"z": 1}},
            "list": [{"n": "k", "m": 2}],
            "metadata": {"name": "keep", "labels": {"a": "b"}},
            "extra": true
        });
        prune(&mut v, &schema);
        assert_eq!(
            v,
            json!({"spec": {"a": "x", "any": {"z": 1}}, "list": [{"n": "k"}], "metadata": {"name": "keep", "labels": {"a": "b"}}})
        );
    }
}
