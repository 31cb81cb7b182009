//! Stamps the binary with the commit it was built from (`wasq --version`): `WASQ_COMMIT` when
//! set (a build without the git checkout, such as the Dockerfile's), else git's, else `unknown`
//! (a source archive, a vendored build). Rebuilds it when the SDKs, templates or WIT it carries
//! change.

fn main() {
    println!("cargo:rerun-if-env-changed=WASQ_COMMIT");
    let commit = std::env::var("WASQ_COMMIT")
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| {
            std::process::Command::new("git")
                .args(["rev-parse", "--short=12", "HEAD"])
                .output()
                .ok()
                .filter(|o| o.status.success())
                .and_then(|o| String::from_utf8(o.stdout).ok())
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
        })
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=WASQ_COMMIT={commit}");
    // What `wasq plugin new` and `plugin build` carry (cli::languages, `include_dir!`, which
    // does not tell cargo what it read on stable Rust): a change there rebuilds the binary.
    for dir in [
        "wit",
        "plugins/sdk/src",
        "crates/bestfit/src",
        "plugins/sdk-python/wasq_policy",
        "plugins/sdk-js",
        "plugins/templates",
    ] {
        println!("cargo:rerun-if-changed={dir}");
    }
    // A new commit or branch changes HEAD or the ref it names.
    for path in [".git/HEAD", ".git/refs/heads", ".git/packed-refs"] {
        if std::path::Path::new(path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}
