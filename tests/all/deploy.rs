//! `deploy/`: what does not need a cluster (the rendering and the API server's verdict are in
//! tests/real_cluster/deploy.rs).

use std::process::Command;

use super::cli::succeeds;

#[test]
fn the_deployed_crds_are_what_wasq_crds_prints() {
    let mut crds = Command::new(env!("CARGO_BIN_EXE_wasq"));
    crds.arg("crds");
    let printed = succeeds(crds, "wasq crds").stdout;
    let deployed = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/deploy/base/crds.yaml"
    ))
    .expect("deploy/base/crds.yaml");
    assert!(
        printed == deployed,
        "deploy/base/crds.yaml is not what `wasq crds` prints: `wasq crds > deploy/base/crds.yaml`"
    );
}

#[test]
fn the_deployed_image_is_this_version() {
    let kustomization = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/deploy/base/kustomization.yaml"
    ))
    .unwrap();
    let tag = format!("newTag: {}\n", env!("CARGO_PKG_VERSION"));
    assert!(
        kustomization.contains(&tag),
        "deploy/base/kustomization.yaml lacks {tag:?}"
    );
}

/// `wasq crds | head`: the reader goes away, wasq ends quietly (no panic, no error, status 0).
#[test]
fn a_reader_that_goes_away_ends_wasq_quietly() {
    let mut pipe = Command::new("bash");
    pipe.arg("-c").arg(format!(
        "set -o pipefail; '{}' crds | head -c 10 >/dev/null",
        env!("CARGO_BIN_EXE_wasq")
    ));
    let out = succeeds(pipe, "wasq crds | head");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
