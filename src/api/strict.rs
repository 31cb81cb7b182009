//! Strict decoding of a parsed YAML document into a typed object.
//!
//! Kubernetes' own types (from `k8s-openapi`) skip fields they do not know, so a typo such as
//! `lables:` or `request:` would silently change what gets scheduled. This module reads a
//! [`serde_json::Value`] through a deserializer that checks every struct's keys against the
//! fields the type declares and every enum string against its variants, recording each unknown
//! one (with a close match suggested) and carrying on, so one pass reports all of them. Other
//! errors stop decoding and carry their field path via `serde_path_to_error`.

use std::cell::RefCell;
use std::fmt;

use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, Visitor};
use serde_json::{Map, Value};

/// A problem at a field path (`spec.resourceGroups[0].flavors`), or at the object itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldProblem {
    pub field: Option<String>,
    pub message: String,
}

impl FieldProblem {
    pub fn at(field: impl Into<String>, message: impl Into<String>) -> Self {
        let field = field.into();
        FieldProblem {
            field: (!field.is_empty()).then_some(field),
            message: message.into(),
        }
    }

    pub fn object(message: impl Into<String>) -> Self {
        FieldProblem {
            field: None,
            message: message.into(),
        }
    }
}

/// Decodes `value` as a `T`, reporting every unknown field and enum value, or the first other
/// error, each with its path.
pub fn decode<T: DeserializeOwned>(value: &Value) -> Result<T, Vec<FieldProblem>> {
    let issues = RefCell::new(Vec::new());
    let de = StrictDe {
        value,
        path: String::new(),
        issues: &issues,
    };
    let result = serde_path_to_error::deserialize::<_, T>(de);
    let mut problems = issues.into_inner();
    match result {
        Ok(v) if problems.is_empty() => Ok(v),
        Ok(_) => Err(problems),
        Err(e) => {
            let path = e.path().to_string();
            let path = if path == "." { String::new() } else { path };
            problems.push(FieldProblem::at(path, tidy(&e.inner().0)));
            Err(problems)
        }
    }
}

/// The closest of `candidates` to `input`, if any is close enough to be a likely typo.
pub fn suggest<'a>(input: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let lower = input.to_lowercase();
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(&lower, &c.to_lowercase()), c))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

/// Appends `, did you mean "x"?` when a candidate is close.
pub fn with_suggestion<'a>(
    message: String,
    input: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> String {
    match suggest(input, candidates) {
        Some(s) => format!("{message}, did you mean {s:?}?"),
        None => message,
    }
}

/// The message for a string that is not one of `allowed`.
pub fn unknown_value(value: &str, allowed: &[&str]) -> String {
    let list = allowed
        .iter()
        .map(|v| format!("{v:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    let base = with_suggestion(
        format!("unknown value {value:?}"),
        value,
        allowed.iter().copied(),
    );
    format!("{base} (allowed: {list})")
}

/// Serde writes names in backticks; manifests users read double quotes.
fn tidy(message: &str) -> String {
    message.replace('`', "\"")
}

/// The error type of [`StrictDe`]: a message; the path is added by `serde_path_to_error`.
#[derive(Debug)]
struct DecodeError(String);

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DecodeError {}

impl de::Error for DecodeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        DecodeError(msg.to_string())
    }
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// A deserializer over a borrowed JSON value that records unknown fields and enum values.
struct StrictDe<'a> {
    value: &'a Value,
    path: String,
    issues: &'a RefCell<Vec<FieldProblem>>,
}

impl StrictDe<'_> {
    fn record(&self, field: String, message: String) {
        self.issues
            .borrow_mut()
            .push(FieldProblem::at(field, message));
    }
}

impl<'de> de::Deserializer<'de> for StrictDe<'_> {
    type Error = DecodeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        match self.value {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Number(n) => {
                if let Some(u) = n.as_u64() {
                    visitor.visit_u64(u)
                } else if let Some(i) = n.as_i64() {
                    visitor.visit_i64(i)
                } else {
                    visitor.visit_f64(n.as_f64().unwrap_or(f64::NAN))
                }
            }
            Value::String(s) => visitor.visit_str(s),
            Value::Array(items) => visitor.visit_seq(SeqReader {
                items: items.iter().enumerate(),
                path: &self.path,
                issues: self.issues,
            }),
            Value::Object(map) => {
                visitor.visit_map(MapReader::new(map, None, &self.path, self.issues))
            }
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        match self.value {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        let Value::Object(map) = self.value else {
            return self.deserialize_any(visitor);
        };
        for key in map.keys() {
            if !fields.contains(&key.as_str()) {
                let message = with_suggestion(
                    format!("unknown field {key:?}"),
                    key,
                    fields.iter().copied(),
                );
                self.record(child(&self.path, key), message);
            }
        }
        visitor.visit_map(MapReader::new(map, Some(fields), &self.path, self.issues))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        match self.value {
            Value::String(s) => {
                let chosen = if variants.contains(&s.as_str()) {
                    s.as_str()
                } else {
                    self.record(self.path.clone(), unknown_value(s, variants));
                    // Carry on with a valid value so the rest of the document is checked too.
                    variants.first().copied().unwrap_or_default()
                };
                visitor.visit_enum(chosen.into_deserializer())
            }
            other => other
                .clone()
                .deserialize_enum(name, variants, visitor)
                .map_err(|e| DecodeError(e.to_string())),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map identifier
    }
}

struct SeqReader<'a, I> {
    items: I,
    path: &'a str,
    issues: &'a RefCell<Vec<FieldProblem>>,
}

impl<'de, 'a, I: Iterator<Item = (usize, &'a Value)>> de::SeqAccess<'de> for SeqReader<'a, I> {
    type Error = DecodeError;

    /// The items left: a `Vec` is decoded into exactly its length (without the hint it grows
    /// by doubling from 4, and a one-element `Vec` of 240-byte `PodSet`s holds 960 bytes).
    fn size_hint(&self) -> Option<usize> {
        match self.items.size_hint() {
            (low, Some(high)) if low == high => Some(low),
            _ => None,
        }
    }

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, DecodeError> {
        match self.items.next() {
            None => Ok(None),
            Some((i, value)) => seed
                .deserialize(StrictDe {
                    value,
                    path: format!("{}[{i}]", self.path),
                    issues: self.issues,
                })
                .map(Some),
        }
    }
}

/// Map entries, skipping the keys a struct does not declare (already recorded as unknown).
struct MapReader<'a> {
    entries: serde_json::map::Iter<'a>,
    fields: Option<&'static [&'static str]>,
    pending: Option<(&'a String, &'a Value)>,
    path: &'a str,
    issues: &'a RefCell<Vec<FieldProblem>>,
}

impl<'a> MapReader<'a> {
    fn new(
        map: &'a Map<String, Value>,
        fields: Option<&'static [&'static str]>,
        path: &'a str,
        issues: &'a RefCell<Vec<FieldProblem>>,
    ) -> Self {
        MapReader {
            entries: map.iter(),
            fields,
            pending: None,
            path,
            issues,
        }
    }
}

impl<'de> de::MapAccess<'de> for MapReader<'_> {
    type Error = DecodeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DecodeError> {
        for (key, value) in self.entries.by_ref() {
            if self.fields.is_some_and(|f| !f.contains(&key.as_str())) {
                continue;
            }
            self.pending = Some((key, value));
            let key: de::value::StrDeserializer<'_, DecodeError> = key.as_str().into_deserializer();
            return seed.deserialize(key).map(Some);
        }
        Ok(None)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, DecodeError> {
        let Some((key, value)) = self.pending.take() else {
            return Err(DecodeError("value requested before its key".into()));
        };
        seed.deserialize(StrictDe {
            value,
            path: child(self.path, key),
            issues: self.issues,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::types::ClusterQueue;
    use k8s_openapi::api::core::v1::Pod;

    #[test]
    fn unknown_fields_are_all_reported_with_suggestions() {
        let v = serde_json::json!({
            "metadata": {"name": "cq", "lables": {"a": "b"}},
            "spec": {"namespaceSelectr": {}, "queueingStrategy": "StrictFifo", "zzz": 1}
        });
        let problems = decode::<ClusterQueue>(&v).unwrap_err();
        let text: Vec<String> = problems
            .iter()
            .map(|p| format!("{}: {}", p.field.as_deref().unwrap_or(""), p.message))
            .collect();
        assert_eq!(
            text,
            [
                r#"metadata.lables: unknown field "lables", did you mean "labels"?"#,
                r#"spec.namespaceSelectr: unknown field "namespaceSelectr", did you mean "namespaceSelector"?"#,
                r#"spec.zzz: unknown field "zzz""#,
                r#"spec.queueingStrategy: unknown value "StrictFifo", did you mean "StrictFIFO"? (allowed: "StrictFIFO", "BestEffortFIFO")"#,
            ]
        );
    }

    #[test]
    fn kubernetes_types_are_checked_too() {
        let v = serde_json::json!({
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "resources": {"request": {"cpu": 1}}}]}
        });
        let problems = decode::<Pod>(&v).unwrap_err();
        assert_eq!(problems.len(), 1);
        assert_eq!(
            problems[0].field.as_deref(),
            Some("spec.containers[0].resources.request")
        );
        assert_eq!(
            problems[0].message,
            r#"unknown field "request", did you mean "requests"?"#
        );
    }

    #[test]
    fn other_errors_carry_their_path() {
        let v = serde_json::json!({"metadata": {"name": "cq"}, "spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [{"name": "cpu"}]}]}]}});
        let problems = decode::<ClusterQueue>(&v).unwrap_err();
        assert_eq!(
            problems,
            [FieldProblem::at(
                "spec.resourceGroups[0].flavors[0].resources[0]",
                r#"missing field "nominalQuota""#
            )]
        );
    }
}
