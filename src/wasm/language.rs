//! Which toolchain produced a plugin, told from the marks each leaves in its component, and
//! the limits a plugin of that language gets unless the configuration says otherwise.
//!
//! An interpreter inside a component costs what a compiled Rust guest does not: componentize-py
//! carries CPython and its standard library (an 18 MB component whose instance starts with tens
//! of MiB of memory), componentize-js carries SpiderMonkey (StarlingMonkey). Their calls run an
//! interpreter over the same requests, so they get more memory and longer deadlines by default
//! (`docs/plugins.md`, "Limits"): a valid Python policy is never timed out on every call, and
//! a Rust one keeps the tight defaults that contain a misbehaving plugin quickly.
//!
//! The marks are the component's own word: a hostile component can carry them and get an
//! interpreter's defaults. Those are bounded like any limits (memory, deadlines, budgets), so it
//! stays contained; for plugins that are not trusted, set `limits` (or `pluginLimits.<name>`) in
//! the configuration, which replace the defaults whatever the component claims.

use super::limits::Limits;

/// The language a plugin was written in, as far as its component tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    /// Built by cargo for `wasm32-wasip2` (wit-bindgen's Rust generator).
    Rust,
    /// Built by componentize-py (CPython in the component).
    Python,
    /// Built by componentize-js (StarlingMonkey in the component).
    JavaScript,
    /// No mark of a toolchain wasq knows.
    Unknown,
}

/// Marks each toolchain leaves, in the order they are tried: an interpreter's component also
/// holds code its runtime was written in (StarlingMonkey's producers name Rust and C++), so the
/// interpreters come first.
const MARKS: &[(Language, &[&[u8]])] = &[
    // The producers section of the component (`processed-by: ComponentizeJS`, `language:
    // JavaScript`).
    (Language::JavaScript, &[b"ComponentizeJS"]),
    // The core modules componentize-py links (`libpython3.x.so`, its runtime).
    (
        Language::Python,
        &[b"componentize_py_runtime", b"libpython3."],
    ),
    (Language::Rust, &[b"wit-bindgen-rust"]),
];

impl Language {
    /// The language of a component's bytes.
    pub fn of(bytes: &[u8]) -> Language {
        MARKS
            .iter()
            .find(|(_, marks)| {
                marks
                    .iter()
                    .any(|m| memchr::memmem::find(bytes, m).is_some())
            })
            .map_or(Language::Unknown, |&(language, _)| language)
    }

    /// How it is named to people (`wasq plugin check`).
    pub fn as_str(self) -> &'static str {
        match self {
            Language::Rust => "rust",
            Language::Python => "python",
            Language::JavaScript => "javascript",
            Language::Unknown => "unknown",
        }
    }

    /// The toolchain that builds it.
    pub fn toolchain(self) -> &'static str {
        match self {
            Language::Rust => "cargo (wasm32-wasip2)",
            Language::Python => "componentize-py",
            Language::JavaScript => "componentize-js",
            Language::Unknown => "unknown",
        }
    }

    /// The limits a plugin of this language gets when the configuration sets none: the
    /// configuration's `limits` and `pluginLimits.<name>` replace these field by field.
    pub fn default_limits(self) -> Limits {
        let rust = Limits::default();
        match self {
            Language::Rust | Language::Unknown => rust,
            // Measured on Kueue's baseline shape (BENCHMARKS.md, "Policies in other
            // languages"): an instance starts with about 40 MiB and grows with its tables; a
            // decision over a few candidates takes a few ms of CPython, and instantiation
            // (CPython's snapshot) tens of ms.
            Language::Python => Limits {
                memory_bytes: 512 << 20,
                deadline_ms: 200,
                deadline_per_item_us: 100,
                cycle_budget_ms: 5_000,
                ..rust
            },
            // StarlingMonkey's instance starts smaller and interprets faster than CPython.
            Language::JavaScript => Limits {
                memory_bytes: 256 << 20,
                deadline_ms: 100,
                deadline_per_item_us: 50,
                cycle_budget_ms: 2_500,
                ..rust
            },
        }
    }
}

impl std::fmt::Display for Language {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_toolchain_is_told_by_its_marks_and_interpreters_first() {
        assert_eq!(
            Language::of(b"\0asm...wit-bindgen-rust0.63"),
            Language::Rust
        );
        assert_eq!(
            Language::of(b"processed-by ComponentizeJS0.23 ... wit-bindgen-rust"),
            Language::JavaScript
        );
        assert_eq!(
            Language::of(b"libpython3.14.so ... wit-bindgen-rust"),
            Language::Python
        );
        assert_eq!(Language::of(b"\0asm\x0d\0\x01\0"), Language::Unknown);
    }

    #[test]
    fn interpreters_get_more_room_than_compiled_guests() {
        let rust = Language::Rust.default_limits();
        for l in [Language::Python, Language::JavaScript] {
            let limits = l.default_limits();
            assert!(limits.memory_bytes > rust.memory_bytes, "{l}");
            assert!(limits.deadline_ms > rust.deadline_ms, "{l}");
            assert_eq!(limits.quarantine_after, rust.quarantine_after, "{l}");
        }
        assert_eq!(Language::Unknown.default_limits(), rust);
    }
}
