//! Errors of loading manifests: each names the file, the document, the object and the field.

use std::path::{Path, PathBuf};

use super::Origin;
use super::strict::FieldProblem;

/// One problem in a set of manifests.
///
/// Displays as `queues.yaml doc 3: ClusterQueue team-a: spec.cohortName: message`, or for YAML
/// syntax errors `queues.yaml line 7 column 3: message`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.render())]
pub struct ManifestError {
    /// The file, as given (a directory's files are joined to the directory as given).
    pub file: PathBuf,
    /// The 1-based document number in the file.
    pub doc: Option<usize>,
    /// 1-based line and column, for YAML syntax errors.
    pub line_column: Option<(usize, usize)>,
    /// `Kind name` or `Kind namespace/name`.
    pub object: Option<String>,
    /// The field path, such as `spec.resourceGroups[0].flavors[1].resources`.
    pub field: Option<String>,
    pub message: String,
}

impl ManifestError {
    /// A problem about a whole file (cannot be read, is not YAML).
    pub fn in_file(file: &Path, message: impl Into<String>) -> Self {
        ManifestError {
            file: file.to_path_buf(),
            doc: None,
            line_column: None,
            object: None,
            field: None,
            message: message.into(),
        }
    }

    /// A problem in a document, optionally about a named object.
    pub fn in_doc(origin: &Origin, object: Option<String>, problem: FieldProblem) -> Self {
        ManifestError {
            file: origin.file.clone(),
            doc: Some(origin.doc),
            line_column: None,
            object,
            field: problem.field,
            message: problem.message,
        }
    }

    fn render(&self) -> String {
        let mut out = self.file.display().to_string();
        if let Some(doc) = self.doc {
            out.push_str(&format!(" doc {doc}"));
        } else if let Some((line, column)) = self.line_column {
            out.push_str(&format!(" line {line} column {column}"));
        }
        for part in [&self.object, &self.field].into_iter().flatten() {
            out.push_str(": ");
            out.push_str(part);
        }
        out.push_str(": ");
        out.push_str(&self.message);
        out
    }
}

/// Every problem found in a set of manifests; a load returns either all objects or this.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", render_all(.errors))]
pub struct LoadErrors {
    pub errors: Vec<ManifestError>,
}

impl LoadErrors {
    pub fn len(&self) -> usize {
        self.errors.len()
    }

    pub fn is_empty(&self) -> bool {
        self.errors.is_empty()
    }

    pub fn iter(&self) -> std::slice::Iter<'_, ManifestError> {
        self.errors.iter()
    }

    /// Each error's display text, one per entry (handy in tests).
    pub fn messages(&self) -> Vec<String> {
        self.errors.iter().map(ToString::to_string).collect()
    }
}

impl<'a> IntoIterator for &'a LoadErrors {
    type Item = &'a ManifestError;
    type IntoIter = std::slice::Iter<'a, ManifestError>;
    fn into_iter(self) -> Self::IntoIter {
        self.errors.iter()
    }
}

fn render_all(errors: &[ManifestError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_every_part_present() {
        let origin = Origin {
            file: "queues.yaml".into(),
            doc: 3,
        };
        let e = ManifestError::in_doc(
            &origin,
            Some("ClusterQueue team-a".into()),
            FieldProblem::at("spec.cohortName", "bad"),
        );
        assert_eq!(
            e.to_string(),
            "queues.yaml doc 3: ClusterQueue team-a: spec.cohortName: bad"
        );
        let mut syntax = ManifestError::in_file(Path::new("q.yaml"), "unclosed bracket '['");
        syntax.line_column = Some((7, 3));
        assert_eq!(
            syntax.to_string(),
            "q.yaml line 7 column 3: unclosed bracket '['"
        );
    }
}
