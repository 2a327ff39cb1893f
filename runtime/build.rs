//! Builds the embedded default provider: compiles the guest crates that
//! `providers/kubernetes/provider.yaml` names for wasm32, turns them into components, and
//! generates `embedded_provider.rs`, which `provider::load_embedded` includes.
//!
//! A transformer's `component` field names its crate's artifact: `kubernetes_deployment.wasm`
//! is the crate `kubernetes-deployment` of the `transformers/` workspace.

use std::fmt::Write as _;
use std::path::PathBuf;

#[path = "../transformers/build_support.rs"]
mod build_support;

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

    let embed_dir = out_dir.join("embedded-provider");
    std::fs::create_dir_all(&embed_dir)?;
    let mut generated = String::from("pub static FILES: &[(&str, &[u8])] = &[\n");
    let mut embed = |name: &str, bytes: &[u8]| -> anyhow::Result<()> {
        let path = embed_dir.join(name);
        std::fs::write(&path, bytes)?;
        writeln!(
            generated,
            "    ({name:?}, include_bytes!({:?})),",
            path.display().to_string()
        )?;
        Ok(())
    };
    embed("provider.yaml", manifest.as_bytes())?;
    for (file, component) in &components {
        embed(file, component)?;
    }
    generated.push_str("];\n");
    std::fs::write(out_dir.join("embedded_provider.rs"), generated)?;
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
