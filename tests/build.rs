//! Builds the guests the tests run that need only Rust, from source, and generates `guests.rs`
//! with a constant per guest (its bytes) and `foreach_guest!`, which the tests use to make a
//! guest without a test a compile error:
//!
//! - every Rust crate under `transformers/testing/` (package `testing-NAME`) and the Rust twin
//!   of the example ServiceTransformer (`example-service`), built for the target its
//!   `[package.metadata.opm] target` names (default `wasm32-unknown-unknown`) with one cargo
//!   invocation per target, and componentized unless rustc already linked a component
//!   (`wasm32-wasip2` does);
//! - the default provider's Deployment transformer and renderer built against the frozen
//!   contract 1.0.0 (`contract_1_0_guests`);
//! - the hand-made fixtures `fixtures/wat/**.wat` (`build/wat_fixtures.rs`), made against the
//!   frozen 1.0.0 too.
//!
//! The guests other toolchains build (JavaScript, Python, C) are built at test time, on first
//! use (`toolchain.rs`), so that building and linting the tests needs nothing but Rust;
//! `foreach_guest!` names them too.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail};

#[path = "../transformers/build_support.rs"]
mod build_support;
#[path = "build/wat_fixtures.rs"]
mod wat_fixtures;

/// The guests `toolchain.rs` builds at test time, each a function of `opm_tests::guests`.
const TOOLCHAIN_GUESTS: [&str; 4] = [
    "testing_c_hello",
    "example_service_js",
    "example_service_python",
    "example_service_c",
];

/// The target of a guest crate that names none.
const DEFAULT_TARGET: &str = "wasm32-unknown-unknown";

/// A built guest, as `guests.rs` exposes it.
struct Guest {
    /// The constant's name in lower case, and the name of the test `foreach_guest!` asks for.
    ident: String,
    /// The constant's doc comment.
    doc: String,
    bytes: Vec<u8>,
}

fn main() -> anyhow::Result<()> {
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let manifest_dir = PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"),
    );
    build_support::rerun_if_guests_change(&["testing", "examples/service/rust", "kubernetes"]);
    println!(
        "cargo:rerun-if-changed={}",
        manifest_dir.join("fixtures/wat").display()
    );

    // Where the core modules of the wasm32-unknown-unknown guests are, before componentizing:
    // `bundles::pack_turns_a_core_module_into_a_component` packs one.
    println!(
        "cargo:rustc-env=OPM_TEST_CORE_MODULES={}",
        build_support::guest_target_dir(&out_dir)
            .join(DEFAULT_TARGET)
            .join("release")
            .display()
    );
    let mut guests = rust_guests(&out_dir)?;
    guests.extend(contract_1_0_guests(&out_dir)?);
    // Against the frozen 1.0.0: the newest context is too large to be passed in parameters
    // (more than 16 flat values), which a hand-written module would have to read from memory;
    // and the sandbox must serve 1.0.0 components, which these are.
    let wit = manifest_dir.join("../wit/1.0.0");
    for fixture in wat_fixtures::build(&manifest_dir.join("fixtures/wat"), &wit)? {
        guests.push(Guest {
            ident: fixture.name.replace('-', "_"),
            doc: format!("Built from `tests/fixtures/wat/{}`.", fixture.source),
            bytes: fixture.bytes,
        });
    }
    write_guests_rs(&out_dir, &guests)
}

/// Builds the Rust crates of `transformers/testing/`, one cargo invocation per target.
fn rust_guests(out_dir: &Path) -> anyhow::Result<Vec<Guest>> {
    let mut guests = Vec::new();
    for (key, packages) in testing_packages_by_target()? {
        let target = key.trim_end_matches(" renderer").to_owned();
        let packages: Vec<&str> = packages.iter().map(String::as_str).collect();
        let components = build_support::build_components_for(&target, &packages, out_dir)?;
        for (file, bytes) in components {
            let ident = file.trim_end_matches(".wasm").to_owned();
            let doc = format!(
                "The component built from the guest workspace crate `{}`, for {target}.",
                ident.replace('_', "-")
            );
            guests.push(Guest { ident, doc, bytes });
        }
    }
    Ok(guests)
}

/// The default Kubernetes provider's Deployment transformer and its renderer, built from
/// their sources against the frozen 1.0.0 of the contract (the SDK's `contract-1-0`), as a
/// provider published before 1.1.0 was: `contract_1_0_kubernetes_deployment` and
/// `contract_1_0_kubernetes_renderer`; and both against the frozen 1.1.0, whose renderer's
/// files have no mode: `contract_1_1_kubernetes_deployment`, `contract_1_1_kubernetes_renderer`. A renderer is built apart, as always.
fn contract_1_0_guests(out_dir: &Path) -> anyhow::Result<Vec<Guest>> {
    let mut guests = Vec::new();
    for (version, package) in [
        ("1.0", "kubernetes-deployment"),
        ("1.0", "kubernetes-renderer"),
        ("1.1", "kubernetes-deployment"),
        ("1.1", "kubernetes-renderer"),
    ] {
        let feature = format!("contract-{}", version.replace('.', "-"));
        let built = build_support::build_components_with(
            DEFAULT_TARGET,
            &[package],
            &[&format!("opm-guest/{feature}")],
            out_dir,
        )?;
        for (file, bytes) in built {
            guests.push(Guest {
                ident: format!(
                    "contract_{}_{}",
                    version.replace('.', "_"),
                    file.trim_end_matches(".wasm")
                ),
                doc: format!(
                    "The guest workspace crate `{package}` built against the frozen contract \
                     {version}.0 (`wit/{version}.0`, the SDK's feature `{feature}`)."
                ),
                bytes,
            });
        }
    }
    Ok(guests)
}

/// The packages `testing-*` and `example-*` of the guest workspace, grouped by the target their
/// `[package.metadata.opm] target` names (`TARGET renderer` for renderer crates, built apart).
fn testing_packages_by_target() -> anyhow::Result<BTreeMap<String, Vec<String>>> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args([
            "metadata",
            "--no-deps",
            "--format-version=1",
            "--manifest-path",
        ])
        .arg(build_support::workspace().join("Cargo.toml"))
        .output()
        .context("running cargo metadata on transformers/")?;
    if !output.status.success() {
        bail!(
            "cargo metadata on transformers/ failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout)?;
    let mut by_target: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for package in metadata["packages"].as_array().into_iter().flatten() {
        let Some(name) = package["name"].as_str() else {
            continue;
        };
        if !name.starts_with("testing-") && !name.starts_with("example-") {
            continue;
        }
        let target = match &package["metadata"]["opm"]["target"] {
            serde_json::Value::Null => DEFAULT_TARGET,
            serde_json::Value::String(target) => target,
            other => bail!("{name}: [package.metadata.opm] target must be a string, not {other}"),
        };
        // A renderer crate enables the SDK's `renderer` feature: built in the same cargo
        // invocation, feature unification would make every transformer a renderer too.
        let key = if name.ends_with("-renderer") {
            format!("{target} renderer")
        } else {
            target.to_owned()
        };
        by_target.entry(key).or_default().push(name.to_owned());
    }
    Ok(by_target)
}

/// Writes each guest's bytes beside `guests.rs`, which includes them.
fn write_guests_rs(out_dir: &Path, guests: &[Guest]) -> anyhow::Result<()> {
    let mut generated = String::new();
    for guest in guests {
        let path = out_dir.join(format!("{}.wasm", guest.ident));
        std::fs::write(&path, &guest.bytes)?;
        writeln!(generated, "/// {}", guest.doc)?;
        writeln!(
            generated,
            "pub const {}: &[u8] = include_bytes!({:?});",
            guest.ident.to_uppercase(),
            path.display().to_string()
        )?;
    }
    writeln!(generated, "/// Calls `$mac!(guest_name)` once per guest.")?;
    writeln!(
        generated,
        "#[macro_export]\nmacro_rules! foreach_guest {{\n    ($mac:ident) => {{"
    )?;
    let names = guests.iter().map(|guest| guest.ident.as_str());
    for name in names.chain(TOOLCHAIN_GUESTS) {
        writeln!(generated, "        $mac!({name});")?;
    }
    writeln!(generated, "    }};\n}}")?;
    std::fs::write(out_dir.join("guests.rs"), generated)?;
    Ok(())
}
