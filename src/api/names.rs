//! Kubernetes name syntaxes (DNS subdomain, DNS label, qualified name, label value), each
//! returning why a string is not one.

const SUBDOMAIN_MAX: usize = 253;
const LABEL_MAX: usize = 63;

/// `Err(reason)` unless `s` is an RFC 1123 DNS subdomain (object names, queue and flavor refs).
pub fn dns_subdomain(s: &str) -> Result<(), String> {
    if s.is_empty() {
        return Err("must not be empty".into());
    }
    if s.len() > SUBDOMAIN_MAX {
        return Err(format!(
            "must be at most {SUBDOMAIN_MAX} characters, got {}",
            s.len()
        ));
    }
    if s.split('.').all(is_label) {
        Ok(())
    } else {
        Err(format!(
            "{s:?} is not a DNS subdomain: use lowercase letters, digits, '-' and '.', \
             starting and ending with a letter or digit"
        ))
    }
}

/// `Err(reason)` unless `s` is an RFC 1123 DNS label (namespaces, podSet names).
pub fn dns_label(s: &str) -> Result<(), String> {
    if s.is_empty() {
        return Err("must not be empty".into());
    }
    if s.len() > LABEL_MAX {
        return Err(format!(
            "must be at most {LABEL_MAX} characters, got {}",
            s.len()
        ));
    }
    if is_label(s) {
        Ok(())
    } else {
        Err(format!(
            "{s:?} is not a DNS label: use lowercase letters, digits and '-', \
             starting and ending with a letter or digit"
        ))
    }
}

/// `Err(reason)` unless `s` is a qualified name: `[prefix/]name`, as label keys, taint keys and
/// resource names (`cpu`, `nvidia.com/gpu`) are.
pub fn qualified_name(s: &str) -> Result<(), String> {
    let (prefix, name) = match s.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, s),
    };
    if let Some(prefix) = prefix {
        dns_subdomain(prefix).map_err(|e| format!("invalid prefix of {s:?}: {e}"))?;
    }
    if name.is_empty() {
        return Err(format!(
            "{s:?} is not a qualified name: the name part must not be empty"
        ));
    }
    if name.len() > LABEL_MAX {
        return Err(format!(
            "{s:?} is not a qualified name: the name part must be at most {LABEL_MAX} characters"
        ));
    }
    if is_label_value_body(name) {
        Ok(())
    } else {
        Err(format!(
            "{s:?} is not a qualified name: use letters, digits, '-', '_' and '.', \
             starting and ending with a letter or digit, with an optional DNS subdomain prefix and '/'"
        ))
    }
}

/// `Err(reason)` unless `s` is a valid label value (may be empty).
pub fn label_value(s: &str) -> Result<(), String> {
    if s.len() > LABEL_MAX {
        return Err(format!(
            "must be at most {LABEL_MAX} characters, got {}",
            s.len()
        ));
    }
    if s.is_empty() || is_label_value_body(s) {
        Ok(())
    } else {
        Err(format!(
            "{s:?} is not a label value: use letters, digits, '-', '_' and '.', \
             starting and ending with a letter or digit"
        ))
    }
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?` of at most 63 characters.
fn is_label(s: &str) -> bool {
    let b = s.as_bytes();
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !b.is_empty()
        && b.len() <= LABEL_MAX
        && b.first().is_some_and(alnum)
        && b.last().is_some_and(alnum)
        && b.iter().all(|c| alnum(c) || *c == b'-')
}

/// `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`.
fn is_label_value_body(s: &str) -> bool {
    let b = s.as_bytes();
    let alnum = |c: &u8| c.is_ascii_alphanumeric();
    b.first().is_some_and(alnum)
        && b.last().is_some_and(alnum)
        && b.iter()
            .all(|c| alnum(c) || matches!(c, b'-' | b'_' | b'.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subdomains_and_labels() {
        assert!(dns_subdomain("team-a.example").is_ok());
        assert!(dns_subdomain("Team").is_err());
        assert!(dns_subdomain("a..b").is_err());
        assert!(dns_subdomain("-a").is_err());
        assert!(dns_label("team-a").is_ok());
        assert!(dns_label("team.a").is_err());
        assert!(dns_label(&"a".repeat(64)).is_err());
    }

    #[test]
    fn qualified_names_and_values() {
        assert!(qualified_name("cpu").is_ok());
        assert!(qualified_name("nvidia.com/gpu").is_ok());
        assert!(qualified_name("kubernetes.io/metadata.name").is_ok());
        assert!(qualified_name("/gpu").is_err());
        assert!(qualified_name("a/b/c").is_err());
        assert!(qualified_name("bad key").is_err());
        assert!(label_value("").is_ok());
        assert!(label_value("Spot_1.x").is_ok());
        assert!(label_value("-x").is_err());
    }
}
