//! Building guest crates from a host `build.rs`: compile packages of the `transformers/`
//! workspace for wasm32 (`wasm32-unknown-unknown` unless a caller names another target) into
//! one guest target directory shared by every build script and every host profile
//! ([`guest_target_dir`]), then turn each core module into a WebAssembly component.
//!
//! Included by `runtime/build.rs` (the embedded default provider) and `tests/build.rs` (the
//! hostile guests the sandbox tests run) with `#[path]`, so both build guests the same way.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail};

/// The `transformers/` workspace, seen from the crate whose build script runs.
pub fn workspace() -> PathBuf {
    let manifest_dir = PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"),
    );
    manifest_dir.join("../transformers")
}

/// Asks cargo to rerun the build script when a guest source (each of `packages_dirs`, a folder
/// or a file of the workspace), the SDK or the WIT changes.
pub fn rerun_if_guests_change(packages_dirs: &[&str]) {
    let workspace = workspace();
    for dir in packages_dirs {
        println!("cargo:rerun-if-changed={}", workspace.join(dir).display());
    }
    for file in ["Cargo.toml", "Cargo.lock", "build_support.rs"] {
        println!("cargo:rerun-if-changed={}", workspace.join(file).display());
    }
    let root = workspace.join("..");
    for path in ["guest-sdk/src", "guest-sdk/Cargo.toml", "wit"] {
        println!("cargo:rerun-if-changed={}", root.join(path).display());
    }
}

/// Builds `packages` for wasm32-unknown-unknown and componentizes each; returns component bytes
/// keyed by the artifact file name (`kubernetes_transformers.wasm`).
#[allow(
    dead_code,
    reason = "included by build scripts that call some of these"
)]
pub fn build_components(
    packages: &[&str],
    out_dir: &Path,
) -> anyhow::Result<BTreeMap<String, Vec<u8>>> {
    // A renderer crate enables the SDK's `renderer` feature, which binds another world: built
    // in the same cargo invocation, feature unification would give every transformer that
    // world too.
    let (renderers, transformers): (Vec<&str>, Vec<&str>) = packages
        .iter()
        .partition(|package| package.ends_with("-renderer"));
    let mut components = build_components_for("wasm32-unknown-unknown", &transformers, out_dir)?;
    if !renderers.is_empty() {
        components.extend(build_components_for(
            "wasm32-unknown-unknown",
            &renderers,
            out_dir,
        )?);
    }
    Ok(components)
}

/// Builds `packages` for `target` in one cargo invocation; returns component bytes keyed by the
/// artifact file name. A core module is componentized; an artifact that is already a component
/// (rustc links `wasm32-wasip2` cdylibs with `wasm-component-ld`) is taken as it is.
pub fn build_components_for(
    target: &str,
    packages: &[&str],
    out_dir: &Path,
) -> anyhow::Result<BTreeMap<String, Vec<u8>>> {
    build_components_with(target, packages, &[], out_dir)
}

/// [`build_components_for`] with the cargo `features` (`opm-guest/contract-1-0`), in a target
/// directory of their own under the guests' (`features-opm-guest-contract-1-0`), so that the
/// artifacts of one feature set never replace another's.
pub fn build_components_with(
    target: &str,
    packages: &[&str],
    features: &[&str],
    out_dir: &Path,
) -> anyhow::Result<BTreeMap<String, Vec<u8>>> {
    let workspace = workspace();
    let mut target_dir = guest_target_dir(out_dir);
    if !features.is_empty() {
        target_dir = target_dir.join(format!("features-{}", features.join("-").replace('/', "-")));
    }
    let mut command = guest_cargo(&workspace);
    command
        .arg("build")
        .arg("--release")
        .arg(format!("--target={target}"))
        .arg("--manifest-path")
        .arg(workspace.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target_dir);
    for package in packages {
        command.arg("-p").arg(package);
    }
    for feature in features {
        command.arg("--features").arg(feature);
    }
    // The host build's flags and wrappers are not the guests' business.
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "RUSTC_WORKSPACE_WRAPPER",
        "CLIPPY_ARGS",
        "CARGO_LLVM_COV",
        "LLVM_PROFILE_FILE",
    ] {
        command.env_remove(var);
    }
    let status = command
        .status()
        .context("running cargo to build the guests")?;
    if !status.success() {
        bail!(
            "building the guests {packages:?} for {target} failed ({status}); \
             if the target is missing, run `rustup target add {target}`"
        );
    }
    let artifacts = target_dir.join(target).join("release");
    let mut components = BTreeMap::new();
    for package in packages {
        let file = format!("{}.wasm", package.replace('-', "_"));
        let path = artifacts.join(&file);
        let artifact =
            std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        let component = if is_component(&artifact) {
            artifact
        } else {
            componentize(&artifact).with_context(|| format!("componentizing {}", path.display()))?
        };
        components.insert(file, component);
    }
    Ok(components)
}

/// The cargo that builds the guests. Under rustup, the one `rust-toolchain.toml` pins, whatever
/// toolchain builds the host: a build by another toolchain then finds the guests the stable
/// build made (with `OPM_GUEST_TARGET_DIR` naming its guest directory) instead of building
/// them all again. Without rustup, the cargo that runs this build script.
fn guest_cargo(workspace: &Path) -> Command {
    let rustup = std::env::var_os("RUSTUP_TOOLCHAIN").is_some();
    let mut command = if rustup {
        Command::new("cargo")
    } else {
        Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
    };
    command
        .current_dir(workspace)
        .env_remove("RUSTUP_TOOLCHAIN");
    command
}

/// Where the guests are built: `$OPM_GUEST_TARGET_DIR` if set, else `guests/` in the host's
/// target directory (the ancestor of
/// `out_dir` that cargo marks with `CACHEDIR.TAG`), so that the default provider's crates and
/// the test guests share their dependencies and `cargo clippy`, `cargo build` and `cargo test`
/// of the host — each running the build scripts again — find the guests already built. Cargo
/// locks the directory, so build scripts that run at once take turns. `out_dir/guests` when no
/// ancestor is marked.
pub fn guest_target_dir(out_dir: &Path) -> PathBuf {
    println!("cargo:rerun-if-env-changed=OPM_GUEST_TARGET_DIR");
    if let Some(dir) = std::env::var_os("OPM_GUEST_TARGET_DIR") {
        return PathBuf::from(dir);
    }
    out_dir
        .ancestors()
        .find(|dir| dir.join("CACHEDIR.TAG").is_file())
        .map_or_else(|| out_dir.join("guests"), |target| target.join("guests"))
}

/// Turns a core module built with wit-bindgen into a component, validating the result.
pub fn componentize(core: &[u8]) -> anyhow::Result<Vec<u8>> {
    wit_component::ComponentEncoder::default()
        .module(core)?
        .validate(true)
        .encode()
}

/// Whether `wasm` starts with the header of a component rather than of a core module.
fn is_component(wasm: &[u8]) -> bool {
    // `\0asm`, then version 0x0d and layer 1 (a core module has version 1, layer 0).
    wasm.starts_with(b"\0asm\x0d\x00\x01\x00")
}
