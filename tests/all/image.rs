//! wasq's container image as `dist/build-image` packs it without a daemon (an OCI image layout,
//! go-containerregistry): its blobs are what their digests say, its configuration names the
//! entrypoint, the non-root user and the version, and its layers, unpacked into a folder, run
//! that entrypoint there (chroot) with nothing from the host.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::cli::succeeds;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The blob a descriptor points at, checked against its digest and size.
fn blob(layout: &Path, descriptor: &Value) -> Vec<u8> {
    let digest = descriptor["digest"].as_str().expect("a digest");
    let hex = digest.strip_prefix("sha256:").expect("a sha256 digest");
    let bytes = std::fs::read(layout.join("blobs/sha256").join(hex)).expect("the blob is there");
    assert_eq!(
        format!("{:x}", Sha256::digest(&bytes)),
        hex,
        "blob {digest}"
    );
    assert_eq!(
        Some(bytes.len() as u64),
        descriptor["size"].as_u64(),
        "size of {digest}"
    );
    bytes
}

fn json(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).expect("json")
}

/// Where `program` is on this process's PATH.
fn on_path(program: &str) -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{program} is not on PATH"))
}

/// `command` as the image's user, in `rootfs`, with the image's environment only.
fn in_image(rootfs: &Path, config: &Value, args: &[&str]) -> Command {
    use std::os::unix::fs::MetadataExt;
    // /proc/self belongs to the effective user.
    let root_user = std::fs::metadata("/proc/self").expect("procfs").uid() == 0;
    // Found on this PATH: the command's own environment is the image's.
    let mut command = Command::new(on_path(if root_user { "chroot" } else { "unshare" }));
    if !root_user {
        // A user namespace in which this user is root may chroot.
        command.args(["--user", "--map-root-user", "chroot"]);
    }
    let user = config["User"].as_str().expect("a user");
    if root_user {
        command.arg(format!("--userspec={user}"));
    }
    command.arg(rootfs);
    command.args(
        config["Entrypoint"]
            .as_array()
            .expect("an entrypoint")
            .iter()
            .map(|a| a.as_str().unwrap()),
    );
    command.args(args).env_clear();
    for pair in config["Env"].as_array().into_iter().flatten() {
        let (k, v) = pair.as_str().unwrap().split_once('=').expect("K=V");
        command.env(k, v);
    }
    command
}

#[test]
fn the_image_runs_its_entrypoint_from_its_own_layers_as_a_non_root_user() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("image");
    let mut build = Command::new(root().join("dist/build-image"));
    build
        .arg("--binary")
        .arg(env!("CARGO_BIN_EXE_wasq"))
        .arg("--plugins")
        .arg(&super::plugins::built().plugins)
        .arg("--out")
        .arg(&out);
    succeeds(build, "dist/build-image");

    let layout = out.join("layout");
    assert_eq!(
        json(&std::fs::read(layout.join("oci-layout")).unwrap())["imageLayoutVersion"],
        "1.0.0"
    );
    let index = json(&std::fs::read(layout.join("index.json")).unwrap());
    let manifests = index["manifests"].as_array().expect("manifests");
    assert_eq!(manifests.len(), 1, "{index}");
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(
        manifests[0]["annotations"]["org.opencontainers.image.ref.name"],
        version
    );
    assert_eq!(
        manifests[0]["annotations"]["io.containerd.image.name"],
        format!("wasq:{version}")
    );
    let manifest = json(&blob(&layout, &manifests[0]));
    assert_eq!(
        manifest["mediaType"],
        "application/vnd.oci.image.manifest.v1+json"
    );
    let image = json(&blob(&layout, &manifest["config"]));
    assert_eq!(
        (image["os"].as_str(), image["architecture"].as_str()),
        (Some("linux"), Some("amd64"))
    );
    let config = &image["config"];
    assert_eq!(
        config["Entrypoint"],
        serde_json::json!(["/usr/local/bin/wasq"])
    );
    assert_eq!(config["User"], "65532:65532", "not root");

    // The labels say what `wasq --version` says.
    let host = succeeds(
        {
            let mut c = Command::new(env!("CARGO_BIN_EXE_wasq"));
            c.arg("--version");
            c
        },
        "wasq --version",
    );
    let said = String::from_utf8(host.stdout).unwrap();
    let labels = &config["Labels"];
    assert_eq!(labels["org.opencontainers.image.version"], version);
    let commit = labels["org.opencontainers.image.revision"]
        .as_str()
        .expect("a revision");
    assert!(said.contains(&format!("commit:     {commit}\n")), "{said}");
    let wit = labels["dev.wasq.wit-package"]
        .as_str()
        .expect("the WIT package");
    let wit_version = wit
        .strip_prefix("wasq:policy@")
        .expect("wasq:policy@VERSION");
    assert!(
        said.contains(&format!("wasq:policy {wit_version} ")),
        "{said}"
    );
    let kueue = labels["dev.wasq.kueue-api"]
        .as_str()
        .expect("the Kueue API");
    assert!(said.contains(&format!("kueue:      {kueue} ")), "{said}");
    // The Dockerfile's image says the same (all but the revision, a build argument there).
    let dockerfile = std::fs::read_to_string(root().join("Dockerfile")).unwrap();
    for (key, value) in labels.as_object().unwrap() {
        if key != "org.opencontainers.image.revision" {
            assert!(
                dockerfile.contains(&format!("{key}={}", value.as_str().unwrap())),
                "Dockerfile label {key}"
            );
        }
    }

    // Unpacked as a runtime would, the layers hold everything the entrypoint needs.
    let rootfs = dir.path().join("rootfs");
    std::fs::create_dir(&rootfs).unwrap();
    for layer in manifest["layers"].as_array().expect("layers") {
        assert_eq!(
            layer["mediaType"],
            "application/vnd.oci.image.layer.v1.tar+gzip"
        );
        blob(&layout, layer);
        let hex = &layer["digest"].as_str().unwrap()["sha256:".len()..];
        let mut untar = Command::new("tar");
        untar
            .arg("-xzf")
            .arg(layout.join("blobs/sha256").join(hex))
            .arg("-C")
            .arg(&rootfs);
        succeeds(untar, "unpacking a layer");
    }
    let inside = succeeds(
        in_image(&rootfs, config, &["--version"]),
        "wasq --version in the image",
    );
    assert_eq!(String::from_utf8(inside.stdout).unwrap(), said);

    // And it schedules: a scenario run in the image decides as the host's binary does.
    let scenario = "examples/reclaim-borrowed-quota.yaml";
    std::fs::copy(root().join(scenario), rootfs.join("tmp/scenario.yaml")).unwrap();
    let workloads =
        |command: Command| json(&succeeds(command, "wasq simulate").stdout)["workloads"].clone();
    let mut host = Command::new(env!("CARGO_BIN_EXE_wasq"));
    host.args(["simulate", "-o", "json"])
        .arg(root().join(scenario));
    let decided = workloads(host);
    assert!(
        decided
            .as_array()
            .is_some_and(|w| w.iter().any(|w| w["state"] == "finished")),
        "{decided}"
    );
    let simulate = in_image(
        &rootfs,
        config,
        &["simulate", "-o", "json", "/tmp/scenario.yaml"],
    );
    assert_eq!(workloads(simulate), decided);

    // The kueue-default modules are in the image where the deployment's QueuePolicies name
    // them; shadowing the built-in in the image, they agree with it.
    let policies = std::fs::read_to_string(root().join("deploy/policies/policies.yaml")).unwrap();
    std::fs::write(rootfs.join("tmp/policies.yaml"), &policies).unwrap();
    for p in ["ordering", "preemption", "flavors", "placement"] {
        let path = format!("/usr/lib/wasq/policies/kueue-default-{p}.wasm");
        assert!(
            policies.contains(&path),
            "deploy/policies/policies.yaml names {path}"
        );
        assert!(rootfs.join(&path[1..]).is_file(), "{path} in the image");
    }
    let shadowed = in_image(
        &rootfs,
        config,
        &[
            "simulate",
            "-o",
            "json",
            "/tmp/scenario.yaml",
            "/tmp/policies.yaml",
        ],
    );
    let report = json(
        &succeeds(
            shadowed,
            "wasq simulate with the deployment's QueuePolicies",
        )
        .stdout,
    );
    assert_eq!(report["workloads"], decided, "shadows change nothing");
    let preemption = &report["summary"]["shadow"]["kueue-default-preemption"];
    assert!(
        preemption["decisions"].as_u64().unwrap() >= 1,
        "{preemption}"
    );
    assert_eq!(preemption["agree"], preemption["decisions"]);

    // The archive is the layout, for `skopeo copy oci-archive:` and `docker load`.
    let mut list = Command::new("tar");
    list.arg("-tf")
        .arg(out.join(format!("wasq-{version}.oci.tar")));
    let listed = String::from_utf8(succeeds(list, "listing the archive").stdout).unwrap();
    for entry in ["./oci-layout", "./index.json"] {
        assert!(
            listed.lines().any(|l| l == entry),
            "{entry} not in the archive:\n{listed}"
        );
    }
}
