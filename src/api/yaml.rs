//! Multi-document YAML text → one JSON value per non-empty document, numbered as a reader
//! counts them (empty documents, such as a trailing `---` or one holding only comments, keep
//! their number but produce no value).

use serde_json::Value;
use serde_saphyr::MessageFormatter;
use serde_saphyr::granit_parser::{Event, Parser, ScalarStyle};

/// One document's content and its 1-based position in the file.
#[derive(Debug, Clone, PartialEq)]
pub struct YamlDoc {
    pub number: usize,
    pub value: Value,
}

/// Malformed YAML, at a 1-based line and column when the parser knows them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub line_column: Option<(usize, usize)>,
    pub message: String,
}

/// The largest file read (serde-saphyr's default for streamed input; a string has none). Memory
/// grows with the file, up to ~12× its size for dense flow collections.
pub const MAX_FILE_BYTES: usize = 256 << 20;

/// serde-saphyr's default budget, with the limits that only grow with the size of the input
/// (documents, nodes, events) scaled to it: a trace of 50,000 Workloads is one file of 50,000
/// documents, past the default 1,024 (and its 250,000 nodes). The limits that guard against
/// amplification (aliases, anchors, recorded anchor events, nesting depth) keep their defaults;
/// the file's size is bounded by [`MAX_FILE_BYTES`].
fn options(text: &str) -> serde_saphyr::Options {
    let mut options = serde_saphyr::Options::default();
    if let Some(budget) = options.budget.as_mut() {
        // About one byte of input per document, node and event at the least (aliases aside,
        // which stay bounded by their own limits).
        let by_size = text.len().saturating_add(1);
        budget.max_documents = budget.max_documents.max(by_size);
        budget.max_nodes = budget.max_nodes.max(by_size);
        budget.max_events = budget.max_events.max(by_size.saturating_mul(2));
    }
    options
}

/// Parses every document of `text`.
pub fn parse_documents(text: &str) -> Result<Vec<YamlDoc>, SyntaxError> {
    if text.len() > MAX_FILE_BYTES {
        return Err(SyntaxError {
            line_column: None,
            message: format!(
                "file of {} MiB is larger than the {} MiB wasq reads; split it into several files",
                text.len().div_ceil(1 << 20),
                MAX_FILE_BYTES >> 20
            ),
        });
    }
    let values =
        serde_saphyr::from_multiple_with_options::<Value>(text, options(text)).map_err(|e| {
            let message = serde_saphyr::DefaultMessageFormatter
                .format_message(e.without_snippet())
                .replace(", set DuplicateKeyPolicy in Options if acceptable", "");
            SyntaxError {
                line_column: e
                    .location()
                    .map(|l| (l.line() as usize, l.column() as usize)),
                message,
            }
        })?;
    let numbers = non_empty_document_numbers(text);
    let numbers: Vec<usize> = if numbers.len() == values.len() {
        numbers
    } else {
        // The two parsers disagree on which documents are empty: fall back to counting values.
        (1..=values.len()).collect()
    };
    Ok(numbers
        .into_iter()
        .zip(values)
        .map(|(number, value)| YamlDoc { number, value })
        .collect())
}

/// The 1-based numbers of documents whose root is not an untagged null (`~`, `null`, nothing).
fn non_empty_document_numbers(text: &str) -> Vec<usize> {
    let mut numbers = Vec::new();
    let mut current = 0;
    let mut awaiting_root = false;
    for event in Parser::new_from_str(text) {
        let Ok((event, _span)) = event else { break };
        match event {
            Event::DocumentStart(..) => {
                current += 1;
                awaiting_root = true;
            }
            Event::Scalar(value, style, _, tag) if awaiting_root => {
                awaiting_root = false;
                let null = style == ScalarStyle::Plain
                    && tag.is_none()
                    && matches!(value.as_ref(), "" | "~" | "null" | "Null" | "NULL");
                if !null {
                    numbers.push(current);
                }
            }
            Event::SequenceStart(..) | Event::MappingStart(..) | Event::Alias(..)
                if awaiting_root =>
            {
                awaiting_root = false;
                numbers.push(current);
            }
            Event::DocumentEnd => awaiting_root = false,
            _ => {}
        }
    }
    numbers
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_documents_keep_their_numbers() {
        let text = "a: 1\n---\n# only a comment\n---\nb: 2\n---\n";
        let docs = parse_documents(text).unwrap();
        let numbers: Vec<usize> = docs.iter().map(|d| d.number).collect();
        assert_eq!(numbers, [1, 3]);
        assert_eq!(docs[1].value, serde_json::json!({"b": 2}));
    }

    #[test]
    fn leading_marker_starts_the_first_document() {
        let docs = parse_documents("---\na: 1\n---\nb: 2\n").unwrap();
        let numbers: Vec<usize> = docs.iter().map(|d| d.number).collect();
        assert_eq!(numbers, [1, 2]);
    }

    #[test]
    fn a_file_of_many_documents_loads_whole() {
        // Past serde-saphyr's default budget of 1,024 documents and 250,000 nodes.
        let doc = "kind: Workload\nmetadata: {name: w, labels: {a: b, c: d}}\nspec: {podSets: [{count: 1}]}\n";
        let n = 30_000;
        let text = vec![doc; n].join("---\n");
        let docs = parse_documents(&text).unwrap();
        assert_eq!(docs.len(), n);
        assert_eq!(docs[n - 1].number, n);
        assert_eq!(docs[n - 1].value["spec"]["podSets"][0]["count"], 1);
    }

    #[test]
    fn alias_amplification_is_still_refused() {
        // Each level is ten aliases of the one before: 10^8 nodes from a few hundred bytes,
        // after 3 MB of comments that raise the size-scaled limits well past their defaults.
        let mut text = "# padding\n".repeat(300_000);
        text.push_str("l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..=8 {
            let p = i - 1;
            let refs = vec![format!("*l{p}"); 10].join(", ");
            text.push_str(&format!("l{i}: &l{i} [{refs}]\n"));
        }
        let err = parse_documents(&text).unwrap_err();
        // Refused by an amplification limit, not by a size limit.
        assert!(
            err.message.contains("RecordedAnchorEvents") || err.message.contains("alias"),
            "{}",
            err.message
        );
    }

    #[test]
    fn a_file_past_the_size_limit_is_refused_before_parsing() {
        let text = "#".repeat(MAX_FILE_BYTES + 1);
        let err = parse_documents(&text).unwrap_err();
        assert_eq!(
            err.message,
            "file of 257 MiB is larger than the 256 MiB wasq reads; split it into several files"
        );
    }

    #[test]
    fn syntax_errors_have_line_and_column() {
        let err = parse_documents("a: 1\n---\nb: [1, 2\n").unwrap_err();
        assert_eq!(err.line_column, Some((3, 4)));
        assert_eq!(err.message, "unclosed bracket '['");
    }
}
