//! Drops the fields a structural schema does not declare, as the API server prunes objects of a
//! CRD. Objects read from a cluster whose CRDs are Kueue's own (which know fields wasq does not
//! model) still decode with wasq's strict types.

use std::collections::HashMap;
use std::path::PathBuf;

use serde_json::Value;

use crate::api::Origin;
use crate::api::decode::{DocumentError, Object, decode_document};
use crate::k8s::schema::crds::object_schema;
use crate::k8s::schema::kinds::KueueKind;

/// The CRD schema of each Kueue kind: objects from the API server (watched, or under
/// admission review) are pruned to it before they are decoded.
#[derive(Debug, Clone)]
pub struct Schemas(HashMap<KueueKind, Value>);

impl Default for Schemas {
    fn default() -> Self {
        Schemas(
            KueueKind::ALL
                .into_iter()
                .map(|k| (k, object_schema(k)))
                .collect(),
        )
    }
}

impl Schemas {
    /// The CRD schema wasq serves for `kind`.
    pub fn schema(&self, kind: KueueKind) -> Option<&Value> {
        self.0.get(&kind)
    }

    /// Decodes an object as the manifest loader does, after pruning it to the schema of
    /// `kind` (when it is a Kueue kind) and dropping `managedFields`; `source` names where it
    /// came from in errors (`<api-server>`, `<admission>`).
    pub fn decode(
        &self,
        kind: Option<KueueKind>,
        mut value: Value,
        source: &str,
    ) -> Result<Object, DocumentError> {
        if let Some(schema) = kind.and_then(|k| self.0.get(&k)) {
            prune(&mut value, schema);
        }
        if let Some(m) = value.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("managedFields");
        }
        let origin = Origin {
            file: PathBuf::from(source),
            doc: 0,
        };
        decode_document(&origin, value)
    }
}

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
