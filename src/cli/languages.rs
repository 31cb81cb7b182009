//! Plugins in Rust, Python and JavaScript: which language a plugin directory is written in, the
//! toolchain that builds it (found on `PATH` or where `.ci/ensure-plugin-toolchains` installs
//! it), and the SDKs and WIT this binary carries, so that `wasq plugin new` and
//! `wasq plugin build` work from an installed binary, outside any source tree, offline.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};
use include_dir::{Dir, include_dir};

use wasq::wasm::PluginKind;

/// The WIT package plugins are built against: this host's version.
static WIT: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/wit");
/// The Rust SDK's sources and the crates it depends on by path.
static RUST_SDK: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/plugins/sdk/src");
static KUEUE: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/crates/kueue/src");
static BESTFIT: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/crates/bestfit/src");
/// The Python SDK package (`wasq_policy/`).
static PYTHON_SDK: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/plugins/sdk-python/wasq_policy");
/// The JavaScript SDK (`index.js`, `testing.js`, `component.js`, `src/`, its types; its own
/// tests and tools are not written out).
static JS_SDK: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/plugins/sdk-js");
/// The scaffolds' templates per language (`<kind>/` each).
static TEMPLATES_RUST: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/plugins/templates/rust");
static TEMPLATES_PYTHON: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/plugins/templates/python");
static TEMPLATES_JS: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/plugins/templates/javascript");

/// The toolchains' versions `.ci/ensure-plugin-toolchains` installs and the docs name.
const COMPONENTIZE_PY_VERSION: &str = "0.25.1";
const COMPONENTIZE_JS_VERSION: &str = "0.23.0";
const JCO_VERSION: &str = "1.35.0";

/// The wit-bindgen the Rust SDK is written against (plugins/Cargo.toml).
const WIT_BINDGEN: &str = "0.63";

/// The language of a plugin's sources.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    Rust,
    Python,
    Javascript,
}

impl std::fmt::Display for Lang {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Lang::Rust => "Rust",
            Lang::Python => "Python",
            Lang::Javascript => "JavaScript",
        })
    }
}

/// A plugin name as `wasq plugin new` takes it and `--policy EXT=NAME` names it: lowercase
/// letters, digits, `-` and `_`, starting with a letter (also the component's file stem).
pub fn check_name(name: &str, whose: &str) -> anyhow::Result<()> {
    let valid = name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if !valid {
        bail!(
            "{whose}: `{name}` is not a valid plugin name (lowercase letters, digits, - and _; \
             starts with a letter): it names the component, NAME.wasm"
        );
    }
    // The SDKs' own folder names: a plugin called so would be taken for its SDK.
    if ["sdk-js", "wasq_policy", "wasq-sdk"].contains(&name) {
        bail!("{whose}: `{name}` is the name of an SDK's folder; choose another");
    }
    Ok(())
}

impl Lang {
    /// The language of the plugin in `dir`, from the manifest it has.
    pub fn of_dir(dir: &Path) -> anyhow::Result<Lang> {
        let found: Vec<Lang> = [
            ("Cargo.toml", Lang::Rust),
            ("pyproject.toml", Lang::Python),
            ("package.json", Lang::Javascript),
        ]
        .into_iter()
        .filter(|(file, _)| dir.join(file).is_file())
        .map(|(_, lang)| lang)
        .collect();
        match found.as_slice() {
            [lang] => Ok(*lang),
            [] => bail!(
                "{} holds no plugin: expected Cargo.toml (Rust), pyproject.toml (Python) or \
                 package.json (JavaScript)",
                dir.display()
            ),
            _ => bail!(
                "{} holds manifests of several languages ({}); keep one",
                dir.display(),
                found
                    .iter()
                    .map(Lang::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

/// What a working copy may hold beside the sources, never written out: caches of Python,
/// pytest and npm.
const NOT_SOURCES: &[&str] = &["__pycache__", ".pytest_cache", "node_modules"];
/// What of `wit/` a build does not read: the released versions kept for reference.
const WIT_SKIP: &[&str] = &["versions"];
/// What of the JavaScript SDK's folder is its own development, not the SDK a plugin uses.
const JS_SDK_DEVELOPMENT: &[&str] = &["test", "tools", "tsconfig.json"];

fn is_source(entry: &include_dir::DirEntry<'_>) -> bool {
    entry
        .path()
        .file_name()
        .is_some_and(|n| !NOT_SOURCES.iter().any(|s| n == *s))
}

/// Writes an embedded directory's files under `to`, but for the top-level entries named in
/// `skip`.
fn extract(dir: &Dir<'_>, to: &Path, skip: &[&str]) -> anyhow::Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    let kept = dir.entries().iter().filter(|e| {
        is_source(e)
            && !skip
                .iter()
                .any(|s| e.path().file_name().is_some_and(|n| n == *s))
    });
    for entry in kept {
        match entry {
            include_dir::DirEntry::Dir(d) => {
                extract(d, &to.join(d.path().file_name().unwrap()), &[])?
            }
            include_dir::DirEntry::File(f) => {
                let path = to.join(f.path().file_name().unwrap());
                std::fs::write(&path, f.contents())
                    .with_context(|| format!("writing {}", path.display()))?;
            }
        }
    }
    Ok(())
}

/// Writes the template of `kind` for `lang` into `dir`, `{{name}}` replaced; files named
/// `*.tmpl` lose that suffix.
fn write_template(lang: Lang, kind: PluginKind, name: &str, dir: &Path) -> anyhow::Result<()> {
    let templates = match lang {
        Lang::Rust => &TEMPLATES_RUST,
        Lang::Python => &TEMPLATES_PYTHON,
        Lang::Javascript => &TEMPLATES_JS,
    };
    let template = templates
        .get_dir(kind.as_str())
        .with_context(|| format!("no {lang} template for {kind}"))?;
    fn copy(from: &Dir<'_>, root: &Path, to: &Path, name: &str) -> anyhow::Result<()> {
        for entry in from.entries().iter().filter(|e| is_source(e)) {
            let relative = entry.path().strip_prefix(root).unwrap_or(entry.path());
            match entry {
                include_dir::DirEntry::Dir(d) => copy(d, root, to, name)?,
                include_dir::DirEntry::File(f) => {
                    let mut path = to.join(relative);
                    if path.extension().is_some_and(|e| e == "tmpl") {
                        path.set_extension("");
                    }
                    if let Some(parent) = path.parent() {
                        std::fs::create_dir_all(parent)?;
                    }
                    let text = f
                        .contents_utf8()
                        .with_context(|| format!("template {} is not text", f.path().display()))?;
                    std::fs::write(&path, text.replace("{{name}}", name))
                        .with_context(|| format!("writing {}", path.display()))?;
                }
            }
        }
        Ok(())
    }
    copy(template, template.path(), dir, name)
}

/// Scaffolds plugin `name` in `dir`: the template, and the SDK it builds against next to it
/// (for Rust, unless `sdk` names an SDK crate to depend on instead).
pub fn scaffold(
    lang: Lang,
    kind: PluginKind,
    name: &str,
    dir: &Path,
    sdk: Option<&Path>,
) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    write_template(lang, kind, name, dir)?;
    match lang {
        Lang::Rust => {
            let sdk_path = match sdk {
                Some(path) => std::fs::canonicalize(path)
                    .with_context(|| format!("the SDK is not at {}", path.display()))?
                    .display()
                    .to_string(),
                None => {
                    vendor_rust_sdk(&dir.join("wasq-sdk"))?;
                    "wasq-sdk/plugins/sdk".to_string()
                }
            };
            let manifest = dir.join("Cargo.toml");
            let text = std::fs::read_to_string(&manifest)?;
            std::fs::write(&manifest, text.replace("{{sdk_path}}", &sdk_path))?;
        }
        Lang::Python => extract(&PYTHON_SDK, &dir.join("wasq_policy"), &[])?,
        // Plugins import the SDK as their sibling `../sdk-js/` (as in this repository's
        // `plugins/`): one copy serves every JavaScript plugin of a folder.
        Lang::Javascript => {
            let sdk = dir.parent().unwrap_or(Path::new(".")).join("sdk-js");
            if !sdk.exists() {
                extract_js_sdk(&sdk)?;
            } else if !js_sdk_is_current(&sdk) {
                eprintln!(
                    "warning: kept {}, which is not the SDK this wasq carries: remove it and run \
                     `wasq plugin new` again to get this wasq's",
                    sdk.display()
                );
            }
        }
    }
    Ok(())
}

/// Whether the JavaScript SDK at `dir` is the one this binary carries (its entry modules
/// compared).
fn js_sdk_is_current(dir: &Path) -> bool {
    ["index.js", "component.js"].iter().all(|file| {
        let carried = JS_SDK.get_file(file).map(|f| f.contents());
        std::fs::read(dir.join(file)).ok().as_deref() == carried
    })
}

/// The JavaScript SDK this binary carries, written to `to`.
fn extract_js_sdk(to: &Path) -> anyhow::Result<()> {
    extract(&JS_SDK, to, JS_SDK_DEVELOPMENT)
}

/// The Rust SDK as a crate of its own under `root`, laid out as in wasq's repository
/// (`plugins/sdk`, `wit`, `crates/kueue`, `crates/bestfit`) so that its relative paths hold.
fn vendor_rust_sdk(root: &Path) -> anyhow::Result<()> {
    let version = env!("CARGO_PKG_VERSION");
    let sdk = root.join("plugins/sdk");
    extract(&RUST_SDK, &sdk.join("src"), &[])?;
    std::fs::write(
        sdk.join("Cargo.toml"),
        format!(
            "[package]\nname = \"wasq-policy-sdk\"\nversion = \"{version}\"\nedition = \"2024\"\n\
             license = \"Apache-2.0\"\ndescription = \"wasq's plugin SDK, as carried by wasq {version}\"\n\
             publish = false\n\n[dependencies]\nwit-bindgen = \"{WIT_BINDGEN}\"\n\
             wasq-kueue = {{ path = \"../../crates/kueue\" }}\n\
             wasq-bestfit = {{ path = \"../../crates/bestfit\" }}\n"
        ),
    )?;
    for (name, sources) in [("kueue", &KUEUE), ("bestfit", &BESTFIT)] {
        let dir = root.join("crates").join(name);
        extract(sources, &dir.join("src"), &[])?;
        std::fs::write(
            dir.join("Cargo.toml"),
            format!(
                "[package]\nname = \"wasq-{name}\"\nversion = \"{version}\"\nedition = \"2024\"\n\
                 license = \"Apache-2.0\"\npublish = false\n\n[dependencies]\n"
            ),
        )?;
    }
    extract(&WIT, &root.join("wit"), WIT_SKIP)?;
    std::fs::write(
        root.join("README.md"),
        format!(
            "The plugin SDK, its WIT package and Kueue's decisions and BestFit placement as wasq \
             {version} carries them (written by `wasq plugin new`). Replace this folder with a \
             newer wasq's to upgrade.\n"
        ),
    )?;
    Ok(())
}

/// Where `.ci/ensure-plugin-toolchains` installs the toolchains: `$WASQ_TOOLCHAINS`, else
/// `$XDG_CACHE_HOME/wasq/toolchains`, else `~/.cache/wasq/toolchains`.
pub fn toolchains_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("WASQ_TOOLCHAINS") {
        return dir.into();
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from(".cache"));
    cache.join("wasq").join("toolchains")
}

/// A tool by name: on `PATH`, else at `fallback` under the toolchains' directory; or an error
/// saying exactly how to install it. A tool whose `--version` does not name `version` is used
/// with a warning naming both.
fn find_tool(name: &str, fallback: &str, version: &str, install: &str) -> anyhow::Result<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .find(|candidate| candidate.is_file())
    });
    let installed = toolchains_dir().join(fallback);
    if let Some(tool) = on_path.or_else(|| installed.is_file().then(|| installed.clone())) {
        let said = Command::new(&tool)
            .arg("--version")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default();
        if !said.contains(version) {
            eprintln!(
                "warning: {} says `{said}`; wasq's SDKs are built and tested with {name} \
                 {version} ({install})",
                tool.display()
            );
        }
        return Ok(tool);
    }
    bail!(
        "{name} is not installed: it is neither on PATH nor at {}. Install it with\n    {install}\n\
         (or run .ci/ensure-plugin-toolchains from wasq's repository, which installs it there)",
        installed.display()
    )
}

fn run(mut command: Command, what: &str) -> anyhow::Result<()> {
    let status = command
        .status()
        .with_context(|| format!("running {what}"))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}

/// The `[tool.wasq]` table of a Python plugin's `pyproject.toml`, and its project name.
#[derive(Debug, serde::Deserialize)]
struct PyProject {
    project: PyProjectMeta,
    tool: Option<PyTools>,
}

#[derive(Debug, serde::Deserialize)]
struct PyProjectMeta {
    name: String,
}

#[derive(Debug, serde::Deserialize)]
struct PyTools {
    wasq: Option<WasqTool>,
}

/// What `wasq plugin build` reads of a plugin's manifest: its extension point, and (Python)
/// the module to compile or (JavaScript) the entry module.
#[derive(Debug, serde::Deserialize)]
struct WasqTool {
    kind: String,
    module: Option<String>,
    entry: Option<String>,
}

fn kind_of(
    tool: Option<WasqTool>,
    manifest: &Path,
    table: &str,
) -> anyhow::Result<(PluginKind, WasqTool)> {
    let tool = tool.with_context(|| {
        format!(
            "{}: no {table} table saying which extension point the plugin implements \
             (kind = \"preemption\", \"ordering\", \"flavor-assignment\", \"placement\" or \"dispatch\")",
            manifest.display()
        )
    })?;
    let kind = PluginKind::parse(&tool.kind).with_context(|| {
        format!(
            "{}: {table}.kind = \"{}\" is none of ordering, preemption, flavor-assignment, \
             placement, dispatch",
            manifest.display(),
            tool.kind
        )
    })?;
    Ok((kind, tool))
}

/// Builds the Python plugin in `dir` into `out/NAME.wasm` with componentize-py.
pub fn build_python(dir: &Path, out: &Path) -> anyhow::Result<PathBuf> {
    let manifest = dir.join("pyproject.toml");
    let text = std::fs::read_to_string(&manifest)
        .with_context(|| format!("reading {}", manifest.display()))?;
    let project: PyProject =
        toml::from_str(&text).with_context(|| format!("{}", manifest.display()))?;
    let (kind, tool) = kind_of(project.tool.and_then(|t| t.wasq), &manifest, "[tool.wasq]")?;
    check_name(
        &project.project.name,
        &format!("{} [project] name", manifest.display()),
    )?;
    let module = tool.module.unwrap_or_else(|| "policy".to_string());
    let tool = find_tool(
        "componentize-py",
        "python/bin/componentize-py",
        COMPONENTIZE_PY_VERSION,
        &format!("pip install componentize-py=={COMPONENTIZE_PY_VERSION}"),
    )?;
    let scratch = tempfile::tempdir()?;
    let wit = scratch.path().join("wit");
    extract(&WIT, &wit, WIT_SKIP)?;
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let file = out.join(format!("{}.wasm", project.project.name));
    // componentize-py imports the plugin and writes bytecode beside it whatever
    // PYTHONDONTWRITEBYTECODE says: it builds from copies, so the sources stay as they were.
    let stage = |from: &Path, name: &str| -> anyhow::Result<PathBuf> {
        let to = scratch.path().join(name);
        copy_tree(
            from,
            &to,
            &["__pycache__", ".git", ".venv", ".pytest_cache"],
        )?;
        Ok(to)
    };
    let staged = stage(dir, "plugin")?;
    let mut command = Command::new(tool);
    command
        .arg("-q")
        .arg("-d")
        .arg(&wit)
        .args([
            "-w",
            &format!("{kind}-plugin"),
            "componentize",
            "--stub-wasi",
        ])
        .arg("-p")
        .arg(&staged);
    // The SDK the plugin's tests import (its conftest.py looks in the same places): its own
    // copy (a scaffold's), `$WASQ_PYTHON_SDK`, a `sdk-python/` beside it (this repository's
    // layout); else the one this binary carries.
    let beside = dir.join("..").join("sdk-python");
    let sdk = if dir.join("wasq_policy").is_dir() {
        None
    } else if let Some(path) = std::env::var_os("WASQ_PYTHON_SDK") {
        Some(stage(&PathBuf::from(path), "sdk-given")?)
    } else if beside.join("wasq_policy").is_dir() {
        Some(stage(&beside, "sdk-beside")?)
    } else {
        let carried = scratch.path().join("sdk");
        extract(&PYTHON_SDK, &carried.join("wasq_policy"), &[])?;
        Some(carried)
    };
    if let Some(sdk) = sdk {
        command.arg("-p").arg(sdk);
    }
    command.arg(&module).arg("-o").arg(&file);
    run(command, "componentize-py")?;
    Ok(file)
}

/// `package.json` as far as `wasq plugin build` reads it.
#[derive(Debug, serde::Deserialize)]
struct PackageJson {
    name: String,
    wasq: Option<WasqTool>,
}

/// Builds the JavaScript plugin in `dir` into `out/NAME.wasm` with componentize-js.
pub fn build_javascript(dir: &Path, out: &Path) -> anyhow::Result<PathBuf> {
    let manifest = dir.join("package.json");
    let text = std::fs::read_to_string(&manifest)
        .with_context(|| format!("reading {}", manifest.display()))?;
    let package: PackageJson =
        serde_json::from_str(&text).with_context(|| format!("{}", manifest.display()))?;
    let (kind, tool) = kind_of(package.wasq, &manifest, "\"wasq\"")?;
    check_name(&package.name, &format!("{} name", manifest.display()))?;
    let entry = tool.entry.unwrap_or_else(|| "policy.js".to_string());
    if entry.contains(['/', '\\', '\'']) || !entry.ends_with(".js") {
        bail!(
            "{}: wasq.entry `{entry}` must be a module file of the plugin's folder (policy.js)",
            manifest.display()
        );
    }
    let componentize = find_tool(
        "componentize-js",
        "node/node_modules/.bin/componentize-js",
        COMPONENTIZE_JS_VERSION,
        &format!(
            "npm install @bytecodealliance/componentize-js@{COMPONENTIZE_JS_VERSION} \
             @bytecodealliance/jco@{JCO_VERSION}"
        ),
    )?;
    // componentize-js follows relative imports only below its working directory: the plugin,
    // its sibling SDK (the plugin's own, else this binary's) and the WIT are staged side by
    // side, with an entry module that binds the SDK to the host and re-exports the policy.
    let scratch = tempfile::tempdir()?;
    let build = scratch.path();
    copy_tree(dir, &build.join("plugin"), &["node_modules", ".git"])?;
    let sibling = dir.join("..").join("sdk-js");
    if sibling.join("index.js").is_file() {
        copy_tree(
            &sibling,
            &build.join("sdk-js"),
            &["node_modules", "test", "tools"],
        )?;
    } else {
        extract_js_sdk(&build.join("sdk-js"))?;
    }
    extract(&WIT, &build.join("wit"), WIT_SKIP)?;
    let interface = match kind {
        PluginKind::Ordering => "ordering",
        PluginKind::Preemption => "preemption",
        PluginKind::FlavorAssignment => "flavorAssignment",
        PluginKind::Placement => "placement",
        PluginKind::Dispatch => "dispatch",
    };
    std::fs::write(
        build.join("entry.js"),
        format!(
            "import './sdk-js/component.js';\nexport {{ {interface} }} from './plugin/{entry}';\n"
        ),
    )?;
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let file = std::path::absolute(out.join(format!("{}.wasm", package.name)))?;
    let mut command = Command::new(componentize);
    command
        .current_dir(build)
        .arg("entry.js")
        .args(["--wit", "wit", "--world-name", &format!("{kind}-plugin")])
        .args(["-d", "stdio", "random", "clocks", "http", "fetch-event"])
        .arg("-o")
        .arg(&file);
    run(command, "componentize-js")?;
    // componentize-js has exited 0 without writing anything when given an unknown option.
    if !file.is_file() {
        bail!("componentize-js wrote no {}", file.display());
    }
    Ok(file)
}

/// Copies `from` into `to`, leaving out the entries named in `skip`, at any depth.
fn copy_tree(from: &Path, to: &Path, skip: &[&str]) -> anyhow::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let entry = entry?;
        let name = entry.file_name();
        if skip.iter().any(|s| name == *s) {
            continue;
        }
        let (source, target) = (entry.path(), to.join(&name));
        if entry.file_type()?.is_dir() {
            copy_tree(&source, &target, skip)?;
        } else {
            std::fs::copy(&source, &target)
                .with_context(|| format!("copying {}", source.display()))?;
        }
    }
    Ok(())
}
