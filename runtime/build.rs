//! Builds the embedded default provider: compiles the guest crates that
//! `providers/kubernetes/provider.yaml` names for wasm32, turns them into components, packs
//! manifest and components into one bundle with the same writer `opm provider pack` uses
//! (`src/bundle/format.rs`), and generates `embedded_provider.rs`, which embeds that bundle for
//! `provider::load_embedded` to load like any bundle file.
//!
//! A transformer's `component` field names its crate's artifact: `kubernetes_deployment.wasm`
//! is the crate `kubernetes-deployment` of the `transformers/` workspace.

use std::path::PathBuf;

#[path = "../transformers/build_support.rs"]
mod build_support;

#[path = "src/bundle/format.rs"]
#[expect(
    dead_code,
    reason = "the build script packs; it does not need every helper"
)]
mod format;

fn main() -> anyhow::Result<()> {
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let provider_dir = build_support::workspace().join("../providers/kubernetes");
    let manifest_path = provider_dir.join("provider.yaml");
    println!("cargo:rerun-if-changed={}", provider_dir.display());
    build_support::rerun_if_guests_change(&["kubernetes"]);

    let manifest = std::fs::read_to_string(&manifest_path)?;
    let files = component_files(&manifest);
    let packages: Vec<String> = files
        .iter()
        .map(|file| file.trim_end_matches(".wasm").replace('_', "-"))
        .collect();
    let packages: Vec<&str> = packages.iter().map(String::as_str).collect();
    let components = build_support::build_components(&packages, &out_dir)?;

    let raw: serde_json::Value = serde_saphyr::from_str(&manifest)?;
    let packed = format::pack(raw, &components)
        .map_err(|e| anyhow::anyhow!("packing {}: {e}", manifest_path.display()))?;
    let bundle = out_dir.join("kubernetes.opmb");
    std::fs::write(&bundle, &packed.bytes)?;
    std::fs::write(
        out_dir.join("embedded_provider.rs"),
        format!(
            "/// The default provider's bundle ({}).\npub static BUNDLE: &[u8] = include_bytes!({:?});\n",
            packed.digest,
            bundle.display().to_string()
        ),
    )?;
    Ok(())
}

/// The `component:` values of a provider manifest. A line scan is enough for the repository's
/// own manifest; the runtime parses it strictly when it loads it, and a test loads it.
fn component_files(manifest: &str) -> Vec<String> {
    let mut files: Vec<String> = manifest
        .lines()
        .filter_map(|line| line.trim().strip_prefix("component:"))
        .map(|value| value.trim().trim_matches(['"', '\'']).to_owned())
        .collect();
    files.sort();
    files.dedup();
    files
}
