//! Whether the server kept what was sent: every field of a sent object is in the stored one
//! with the same value (the server may add fields — defaults, metadata — but not drop or
//! change any).

use serde_json::Value;

/// Where `stored` lacks or differs from `sent`, as `path: sent → stored` lines (empty when
/// everything was kept). A `null` sent is kept by its absence (a merge patch's deletion).
pub fn differences(sent: &Value, stored: &Value) -> Vec<String> {
    let mut out = Vec::new();
    walk(sent, Some(stored), &mut String::new(), &mut out);
    out
}

fn walk(sent: &Value, stored: Option<&Value>, path: &mut String, out: &mut Vec<String>) {
    match (sent, stored) {
        (Value::Null, None | Some(Value::Null)) => {}
        (Value::Object(fields), Some(Value::Object(kept))) => {
            for (name, value) in fields {
                let len = path.len();
                path.push('.');
                path.push_str(name);
                walk(value, kept.get(name), path, out);
                path.truncate(len);
            }
        }
        (Value::Array(items), Some(Value::Array(kept))) if items.len() == kept.len() => {
            for (i, (item, k)) in items.iter().zip(kept).enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                walk(item, Some(k), path, out);
                path.truncate(len);
            }
        }
        (a, Some(b)) if a == b => {}
        (a, b) => out.push(format!(
            "{}: {a} → {}",
            if path.is_empty() { "." } else { path },
            b.map_or("(absent)".to_string(), Value::to_string)
        )),
    }
}

/// Fails the test with every difference, naming what was compared.
#[track_caller]
pub fn assert_kept(what: &str, sent: &Value, stored: &Value) {
    let diffs = differences(sent, stored);
    assert!(
        diffs.is_empty(),
        "{what}: the server did not keep what was sent:\n  {}",
        diffs.join("\n  ")
    );
}

#[test]
fn differences_name_dropped_and_changed_fields() {
    let sent = serde_json::json!({"a": 1, "b": {"c": [1, {"d": "x"}]}, "gone": null});
    let stored = serde_json::json!({"a": 1, "b": {"c": [1, {"d": "y"}]}, "extra": true});
    assert_eq!(differences(&sent, &stored), vec![r#".b.c[1].d: "x" → "y""#]);
    let pruned = serde_json::json!({"b": {"c": [1]}});
    assert_eq!(
        differences(&sent, &pruned),
        vec![".a: 1 → (absent)", r#".b.c: [1,{"d":"x"}] → [1]"#]
    );
}
