//! Every `wasq` command the README and the reference in `docs/` show in a shell block runs, as
//! written, and succeeds: the binary under test stands for `wasq` and `cargo run [--release] --`,
//! `target/plugins` for the plugins the tests built, and the commands of each shell block run in
//! order in a folder of their own (a `--report report.html` lands there, `> FILE` writes there), the repository's `examples/` and `tests/` named
//! by their absolute paths (see `resolved`).
//!
//! Left out: `wasq plugin build` (the tests build the same plugins through
//! `wasm::guests`, `plugins.rs`), and the lines that are not wasq's (`kubectl`, `kind`,
//! `dist/build-image`, `.ci/…`), which the real-cluster and image tests run.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::cli::succeeds;
use super::plugins::built;

/// A documented command: where it is written, its shell block (commands of one block run in
/// one folder, in order), and its words after `wasq`.
struct Documented {
    at: String,
    block: usize,
    words: Vec<String>,
}

/// The `wasq` commands of the shell blocks of `markdown` (lines joined at a trailing `\`,
/// comments dropped).
fn commands(file: &str, markdown: &str) -> Vec<Documented> {
    let mut found = Vec::new();
    let mut in_shell = false;
    let mut block = 0;
    let mut pending: Option<(usize, String)> = None;
    for (n, line) in markdown.lines().enumerate() {
        let fence = line.trim_start();
        if fence.starts_with("```") {
            in_shell = !in_shell && matches!(fence.trim_end(), "```sh" | "```bash" | "```shell");
            block += 1;
            continue;
        }
        if !in_shell {
            continue;
        }
        let text = line.split(" #").next().unwrap_or("").trim_end();
        let (start, mut joined) = pending.take().unwrap_or((n + 1, String::new()));
        joined.push(' ');
        joined.push_str(text.trim_end_matches('\\').trim());
        if text.ends_with('\\') {
            pending = Some((start, joined));
            continue;
        }
        let words: Vec<&str> = joined.split_whitespace().collect();
        let rest = match words.as_slice() {
            ["wasq", rest @ ..] => rest,
            ["cargo", "run", "--release", "--", rest @ ..] | ["cargo", "run", "--", rest @ ..] => {
                rest
            }
            _ => continue,
        };
        found.push(Documented {
            at: format!("{file}:{start}"),
            block,
            words: rest.iter().map(|w| w.to_string()).collect(),
        });
    }
    found
}

/// A word as the test runs it in `dir`: the built plugins for `target/plugins`, the
/// repository's files by absolute path — but a file that names a module under
/// `../../target/plugins/` (a `QueuePolicy` of `examples/policies/`) is copied into `dir` with
/// the built plugins' path in its place.
fn resolved(word: &str, repo: &Path, dir: &Path) -> String {
    let plugins = &built().plugins;
    if word == "target/plugins" {
        return plugins.display().to_string();
    }
    if !["examples/", "tests/"].iter().any(|p| word.starts_with(p)) {
        return word.to_string();
    }
    let file = repo.join(word);
    match std::fs::read_to_string(&file) {
        Ok(text) if text.contains("../../target/plugins/") => {
            let copy = dir.join(file.file_name().expect("a file name"));
            let text = text.replace("../../target/plugins/", &format!("{}/", plugins.display()));
            std::fs::write(&copy, text).expect("writable");
            copy.display().to_string()
        }
        _ => file.display().to_string(),
    }
}

#[test]
fn every_documented_wasq_command_runs() {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![repo.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(repo.join("docs"))
        .expect("docs/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    let mut ran = 0;
    for file in &files {
        let name = file.strip_prefix(&repo).unwrap().display().to_string();
        let markdown = std::fs::read_to_string(file).expect("readable");
        let mut folder: Option<(usize, tempfile::TempDir)> = None;
        for command in commands(&name, &markdown) {
            if command.words.first().is_some_and(|w| w == "plugin")
                && command.words.get(1).is_some_and(|w| w == "build")
            {
                continue;
            }
            if folder.as_ref().is_none_or(|(b, _)| *b != command.block) {
                folder = Some((command.block, tempfile::tempdir().expect("tempdir")));
            }
            let dir = &folder.as_ref().expect("made above").1;
            // `> FILE`: standard output into FILE, in the block's folder.
            let (words, into) = match command.words.iter().position(|w| w == ">") {
                Some(at) => (&command.words[..at], command.words.get(at + 1)),
                None => (&command.words[..], None),
            };
            let mut wasq = Command::new(env!("CARGO_BIN_EXE_wasq"));
            wasq.current_dir(dir.path())
                .args(words.iter().map(|w| resolved(w, &repo, dir.path())));
            let out = succeeds(
                wasq,
                &format!("{}: wasq {}", command.at, command.words.join(" ")),
            );
            if let Some(file) = into {
                std::fs::write(dir.path().join(file), out.stdout).expect("writable");
            }
            ran += 1;
        }
    }
    // The README's and the simulator's, placement's and plugins' examples at least: a parser
    // that found none would pass without running anything.
    assert!(ran >= 8, "only {ran} documented commands found");
}

#[test]
fn commands_are_read_from_shell_blocks_only_joined_and_without_comments() {
    let markdown = "Run `wasq simulate x.yaml` inline (not a block).\n\
        ```sh\n\
        cargo run --release -- simulate examples/a.yaml \\\n    --compare a=b c=d   # two runs\n\
        kubectl apply -f x.yaml\n\
        wasq plugin list\n\
        ```\n\
        ```yaml\n\
        wasq: not a command\n\
        ```\n";
    let found = commands("doc.md", markdown);
    let words: Vec<Vec<String>> = found.iter().map(|c| c.words.clone()).collect();
    assert_eq!(
        words,
        vec![
            vec!["simulate", "examples/a.yaml", "--compare", "a=b", "c=d"],
            vec!["plugin", "list"],
        ]
    );
    assert_eq!(found[0].at, "doc.md:3");
}
