//! Builds the guests the tests run, from source: every crate under `transformers/testing/`
//! (package `testing-NAME`), compiled for wasm32 and componentized. Generates `guests.rs` with a
//! constant per guest (its component bytes) and `foreach_guest!`, which the tests use to make a
//! guest without a test a compile error.

use std::fmt::Write as _;
use std::path::PathBuf;

#[path = "../transformers/build_support.rs"]
mod build_support;

fn main() -> anyhow::Result<()> {
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    build_support::rerun_if_guests_change(&["testing"]);
    let mut names: Vec<String> = std::fs::read_dir(build_support::workspace().join("testing"))?
        .filter_map(Result::ok)
        .filter(|entry| entry.path().join("Cargo.toml").is_file())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let packages: Vec<String> = names.iter().map(|name| format!("testing-{name}")).collect();
    let packages: Vec<&str> = packages.iter().map(String::as_str).collect();
    let components = build_support::build_components(&packages, &out_dir)?;

    let mut generated = String::new();
    let mut idents = Vec::new();
    for (file, bytes) in &components {
        let ident = file.trim_end_matches(".wasm").to_owned();
        let path = out_dir.join(format!("{ident}.component.wasm"));
        std::fs::write(&path, bytes)?;
        writeln!(
            generated,
            "/// The component built from `transformers/testing`, crate `{ident}`."
        )?;
        writeln!(
            generated,
            "pub const {}: &[u8] = include_bytes!({:?});",
            ident.to_uppercase(),
            path.display().to_string()
        )?;
        idents.push(ident);
    }
    writeln!(generated, "/// Calls `$mac!(guest_name)` once per guest.")?;
    writeln!(
        generated,
        "#[macro_export]\nmacro_rules! foreach_guest {{\n    ($mac:ident) => {{"
    )?;
    for ident in &idents {
        writeln!(generated, "        $mac!({ident});")?;
    }
    writeln!(generated, "    }};\n}}")?;
    std::fs::write(out_dir.join("guests.rs"), generated)?;
    Ok(())
}
