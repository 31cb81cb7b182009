//! Text that comes from a plugin (its log lines, its panic messages, anything a trap carries),
//! made safe to store and print: a plugin must not be able to forge a log line, move the
//! terminal's cursor or hide text from the reader of a report.

use std::borrow::Cow;
use std::fmt::Write;

/// `text` with every character that could change how it is displayed written out as an escape:
/// line and paragraph breaks (`\n`, `\r`, U+2028/9), tabs, every other control character (C0,
/// DEL, C1 — ESC starts the terminal's control sequences) and the invisible formatting
/// characters that reorder or hide text (bidirectional overrides and isolates, zero-width
/// characters, the BOM), as `\n`, `\r`, `\t` or `\u{…}`. A backslash is doubled, so an escape
/// the plugin wrote itself cannot pass for one of these. Printable text, any script, is kept.
pub fn escape(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if needs_escape(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

fn needs_escape(c: char) -> bool {
    c == '\\'
        || c.is_control()
        || matches!(
            c,
            '\u{200b}'..='\u{200f}'   // zero-width space, joiners, LRM, RLM
                | '\u{2028}'..='\u{202e}' // line/paragraph separators, bidi embeddings and overrides
                | '\u{2060}'..='\u{2064}' // word joiner, invisible operators
                | '\u{2066}'..='\u{2069}' // bidi isolates
                | '\u{feff}' // byte-order mark / zero-width no-break space
        )
}

/// `text` escaped and cut to at most `max` bytes (on a character boundary, then `…`).
pub fn escape_cut(text: &str, max: usize) -> String {
    let escaped = escape(text);
    if escaped.len() <= max {
        return escaped.into_owned();
    }
    let mut end = max;
    while !escaped.is_char_boundary(end) {
        end -= 1;
    }
    let mut out = escaped[..end].to_string();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::{escape, escape_cut};

    #[test]
    fn printable_text_is_kept_as_it_is() {
        for s in ["victims: 3 of 12", "naïve — 日本語 ✓", ""] {
            assert!(matches!(escape(s), std::borrow::Cow::Borrowed(_)), "{s}");
        }
    }

    #[test]
    fn line_breaks_and_terminal_sequences_are_written_out() {
        assert_eq!(
            escape("ok\n2026-12-06T00:00:00Z ERROR wasq: forged"),
            "ok\\n2026-12-06T00:00:00Z ERROR wasq: forged"
        );
        // Cursor up, erase line: the sequences a plugin would use to rewrite what was printed.
        assert_eq!(
            escape("\x1b[1A\x1b[2Kdone\r"),
            "\\u{1b}[1A\\u{1b}[2Kdone\\r"
        );
        assert_eq!(escape("a\tb\u{7f}\u{85}"), "a\\tb\\u{7f}\\u{85}");
    }

    #[test]
    fn invisible_reordering_characters_are_written_out() {
        assert_eq!(
            escape("admit \u{202e}gnissap\u{202c}"),
            "admit \\u{202e}gnissap\\u{202c}"
        );
        assert_eq!(escape("x\u{200b}y\u{2028}z"), "x\\u{200b}y\\u{2028}z");
    }

    #[test]
    fn a_backslash_is_doubled_so_escapes_cannot_be_forged() {
        assert_eq!(escape("\\n"), "\\\\n");
        assert_ne!(escape("\\n"), escape("\n"));
    }

    #[test]
    fn cutting_happens_after_escaping_on_a_char_boundary() {
        assert_eq!(escape_cut("abc", 10), "abc");
        assert_eq!(escape_cut("\n\n\n", 4), "\\n\\n…");
        assert_eq!(escape_cut("ééé", 3), "é…");
    }
}
