//! The static build of opm and its `FROM scratch` image: the form a CI job or an Argo CD plugin
//! sidecar runs. The test builds opm for the host's musl target (`tests/setup.sh` installs the
//! target and musl-gcc), checks that the binary is static, makes an image of that one file with
//! `docker import` into the private Docker Engine of `tests/docker.rs`, and renders the hello
//! example mounted into a container of it, with no network: byte for byte what the host's opm
//! renders, the embedded provider's precompiled code and all.
//!
//! The build is the README's, but for the profile: the `dev` profile (its dependencies are
//! optimised as a release build's; opm's own crates are not), which saves CI minutes of
//! optimising what renders one module here. CI builds it once, before the suite, and names it
//! in `OPM_STATIC_OPM` (`.ci/run`); without it, the test builds it.

use std::path::PathBuf;
use std::process::Command;

use opm_tests::docker::{Engine, is_static_elf};
use opm_tests::{hello, opm, repo_root};

/// The image the test makes.
const IMAGE: &str = "opm-test/opm:static";

/// The static `opm`: `OPM_STATIC_OPM` when CI built it, else built here for the host's musl
/// target.
fn static_opm() -> PathBuf {
    if let Some(built) = std::env::var_os("OPM_STATIC_OPM") {
        return PathBuf::from(built);
    }
    assert!(
        !opm_tests::tier::in_ci(),
        "CI builds the static opm once, before the suite, and names it in OPM_STATIC_OPM"
    );
    let target = format!("{}-unknown-linux-musl", std::env::consts::ARCH);
    let target_dir = repo_root().join("target");
    let mut build = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    build
        .current_dir(repo_root())
        .args(["build", "--locked", "--quiet", "--target", &target])
        .args(["-p", "opm-runtime", "--bin", "opm"])
        .env("CARGO_TARGET_DIR", &target_dir);
    // The suite's own flags and lint wrapper are not the static build's.
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_BUILD_TARGET",
        "RUSTC_WORKSPACE_WRAPPER",
        "CLIPPY_ARGS",
    ] {
        build.env_remove(var);
    }
    let output = build.output().expect("cargo runs");
    assert!(
        output.status.success(),
        "the static build failed (tests/setup.sh installs the {target} target and musl-gcc):\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    target_dir.join(target).join("debug/opm")
}

#[test]
fn a_static_opm_in_a_from_scratch_image_renders_a_mounted_module() {
    let test = "container::a_static_opm_in_a_from_scratch_image_renders_a_mounted_module";
    if !opm_tests::tier::needs(test, opm_tests::tier::Need::Docker) {
        return;
    }
    let binary = static_opm();
    assert!(
        is_static_elf(&binary),
        "{} is not a static executable",
        binary.display()
    );
    let engine = Engine::start();
    let root = tempfile::tempdir().expect("temp dir");
    std::fs::copy(&binary, root.path().join("opm")).expect("copy opm");
    engine.import(root.path(), IMAGE, &["ENTRYPOINT [\"/opm\"]"]);

    let examples = repo_root().join("examples/hello");
    let mount = format!("{}:/module:ro", examples.display());
    let rendered = engine.docker_ok([
        "run",
        "--rm",
        "--network=none",
        "--read-only",
        "-v",
        &mount,
        IMAGE,
        "mod",
        "build",
        "/module/module.yaml",
    ]);
    let host = opm(["mod", "build", &hello()]);
    assert!(host.exited(0), "{}", host.stderr);
    assert_eq!(
        rendered, host.stdout,
        "the image renders what the host renders"
    );
    assert!(rendered.contains("kind: Deployment"), "{rendered}");
    engine.docker_ok(["image", "rm", IMAGE]);
}
