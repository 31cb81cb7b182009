//! Where each part of a Workload came from, so that a problem found in a Workload made from a
//! Job or from Pods is reported against the document and field the user wrote
//! (`spec.podSets[0].template` of `Workload default/job-x` is `spec.template` of `Job default/x`).

use super::Origin;

/// The source of a Workload: the document that produced it and routes from Workload field
/// prefixes to the fields they were made from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provenance {
    pub origin: Origin,
    /// How errors name the source object (`Job default/x`).
    pub object: String,
    pub routes: Vec<FieldRoute>,
}

/// `workload_prefix` (and anything below it) was made from `source_prefix` of `object` in
/// `origin`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldRoute {
    pub workload_prefix: String,
    pub origin: Origin,
    pub object: String,
    pub source_prefix: String,
}

/// Where a Workload field is reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    pub origin: Origin,
    pub object: String,
    pub field: Option<String>,
}

impl Provenance {
    /// A Workload written as such: fields map to themselves.
    pub fn written(origin: Origin, object: String) -> Self {
        Provenance {
            origin,
            object,
            routes: Vec::new(),
        }
    }

    /// Adds a route from a Workload field prefix to a field of the main source object.
    pub fn route(&mut self, workload_prefix: &str, source_prefix: &str) {
        let (origin, object) = (self.origin.clone(), self.object.clone());
        self.route_to(workload_prefix, origin, object, source_prefix);
    }

    /// Adds a route from a Workload field prefix to a field of another source object.
    pub fn route_to(
        &mut self,
        workload_prefix: &str,
        origin: Origin,
        object: String,
        source: &str,
    ) {
        self.routes.push(FieldRoute {
            workload_prefix: workload_prefix.into(),
            origin,
            object,
            source_prefix: source.into(),
        });
    }

    /// Where to report a problem at `field` of the Workload; the longest matching route wins.
    pub fn locate(&self, field: Option<&str>) -> Located {
        let best = field.and_then(|f| {
            self.routes
                .iter()
                .filter_map(|r| strip_path_prefix(f, &r.workload_prefix).map(|rest| (r, rest)))
                .max_by_key(|(r, _)| r.workload_prefix.len())
        });
        match best {
            Some((route, rest)) => Located {
                origin: route.origin.clone(),
                object: route.object.clone(),
                field: Some(format!("{}{rest}", route.source_prefix)).filter(|f| !f.is_empty()),
            },
            None => Located {
                origin: self.origin.clone(),
                object: self.object.clone(),
                field: field.map(str::to_owned),
            },
        }
    }
}

/// `Some(rest)` if `path` is `prefix` or lies below it (`rest` starts with `.` or `[`).
fn strip_path_prefix<'a>(path: &'a str, prefix: &str) -> Option<&'a str> {
    let rest = path.strip_prefix(prefix)?;
    (rest.is_empty() || rest.starts_with('.') || rest.starts_with('[')).then_some(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_route_wins_and_unrouted_fields_stay() {
        let origin = Origin {
            file: "jobs.yaml".into(),
            doc: 2,
        };
        let mut p = Provenance::written(origin.clone(), "Job default/x".into());
        p.route("spec.podSets[0]", "spec");
        p.route("spec.podSets[0].template", "spec.template");
        let at = p.locate(Some("spec.podSets[0].template.spec.containers[0]"));
        assert_eq!(
            at.field.as_deref(),
            Some("spec.template.spec.containers[0]")
        );
        assert_eq!(
            p.locate(Some("spec.podSets[0].templateX")).field.as_deref(),
            Some("spec.templateX")
        );
        assert_eq!(
            p.locate(Some("metadata.name")).field.as_deref(),
            Some("metadata.name")
        );
        assert_eq!(p.locate(None).object, "Job default/x");
    }
}
