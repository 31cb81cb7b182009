//! Label and field selectors as the API server parses them from `labelSelector` and
//! `fieldSelector`: `key`, `!key`, `key=value`, `key==value`, `key!=value`, `key in (a,b)`,
//! `key notin (a,b)` for labels; `path=value`, `path==value`, `path!=value` for fields
//! (`metadata.name`, `metadata.namespace` and any dotted path into the object).

use serde_json::Value;

use super::status::ApiError;

#[derive(Debug, Clone, PartialEq)]
enum Req {
    Exists(String),
    NotExists(String),
    Eq(String, String),
    NotEq(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
}

/// A parsed selector: every requirement must hold.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Selector {
    reqs: Vec<Req>,
    /// Field selectors read dotted paths into the object; label selectors read labels.
    fields: bool,
}

/// Splits on commas outside parentheses.
fn terms(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out.into_iter()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .collect()
}

fn set(values: &str) -> Result<Vec<String>, ApiError> {
    let inner = values
        .trim()
        .strip_prefix('(')
        .and_then(|v| v.strip_suffix(')'))
        .ok_or_else(|| ApiError::bad_request(format!("unable to parse requirement: {values}")))?;
    Ok(inner.split(',').map(|v| v.trim().to_string()).collect())
}

impl Selector {
    pub fn labels(s: &str) -> Result<Selector, ApiError> {
        let mut reqs = Vec::new();
        for t in terms(s) {
            let req = if let Some(k) = t.strip_prefix('!') {
                Req::NotExists(k.trim().into())
            } else if let Some((k, v)) = t.split_once("!=") {
                Req::NotEq(k.trim().into(), v.trim().into())
            } else if let Some((k, v)) = t.split_once("==").or_else(|| t.split_once('=')) {
                Req::Eq(k.trim().into(), v.trim().into())
            } else if let Some((k, v)) = t.split_once(" notin ") {
                Req::NotIn(k.trim().into(), set(v)?)
            } else if let Some((k, v)) = t.split_once(" in ") {
                Req::In(k.trim().into(), set(v)?)
            } else {
                Req::Exists(t.into())
            };
            reqs.push(req);
        }
        Ok(Selector {
            reqs,
            fields: false,
        })
    }

    pub fn fields(s: &str) -> Result<Selector, ApiError> {
        let mut reqs = Vec::new();
        for t in terms(s) {
            let req = if let Some((k, v)) = t.split_once("!=") {
                Req::NotEq(k.trim().into(), v.trim().into())
            } else if let Some((k, v)) = t.split_once("==").or_else(|| t.split_once('=')) {
                Req::Eq(k.trim().into(), v.trim().into())
            } else {
                return Err(ApiError::bad_request(format!(
                    "invalid field selector: {t}"
                )));
            };
            reqs.push(req);
        }
        Ok(Selector { reqs, fields: true })
    }

    fn value(&self, obj: &Value, key: &str) -> Option<String> {
        let v = if self.fields {
            key.split('.').try_fold(obj, |v, k| v.get(k))?
        } else {
            obj.get("metadata")?.get("labels")?.get(key)?
        };
        match v {
            Value::String(s) => Some(s.clone()),
            Value::Null => None,
            other => Some(other.to_string()),
        }
    }

    pub fn matches(&self, obj: &Value) -> bool {
        self.reqs.iter().all(|r| match r {
            Req::Exists(k) => self.value(obj, k).is_some(),
            Req::NotExists(k) => self.value(obj, k).is_none(),
            // A field selector compares with "" when the field is absent.
            Req::Eq(k, v) if self.fields => self.value(obj, k).unwrap_or_default() == *v,
            Req::NotEq(k, v) if self.fields => self.value(obj, k).unwrap_or_default() != *v,
            Req::Eq(k, v) => self.value(obj, k).as_ref() == Some(v),
            Req::NotEq(k, v) => self.value(obj, k).as_ref() != Some(v),
            Req::In(k, vs) => self.value(obj, k).is_some_and(|x| vs.contains(&x)),
            Req::NotIn(k, vs) => self.value(obj, k).is_none_or(|x| !vs.contains(&x)),
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn label_requirements() {
        let obj = json!({"metadata": {"name": "a", "labels": {"app": "x", "tier": "web"}}});
        let yes = |s: &str| Selector::labels(s).unwrap().matches(&obj);
        assert!(yes("app"));
        assert!(!yes("!app"));
        assert!(yes("!missing"));
        assert!(yes("app=x,tier==web"));
        assert!(!yes("app=y"));
        assert!(yes("app!=y"));
        assert!(yes("tier in (db, web)"));
        assert!(!yes("tier notin (db,web)"));
        assert!(yes("missing notin (a)"));
        assert!(yes(""));
    }

    #[test]
    fn field_requirements() {
        let obj = json!({"metadata": {"name": "a", "namespace": "ns"}, "spec": {"nodeName": ""}});
        let yes = |s: &str| Selector::fields(s).unwrap().matches(&obj);
        assert!(yes("metadata.name=a,metadata.namespace==ns"));
        assert!(!yes("metadata.name!=a"));
        assert!(yes("spec.nodeName="));
        assert!(yes("status.phase="));
        assert!(Selector::fields("nonsense").is_err());
    }
}
