//! Builds the embedded providers (`kubernetes`, the default, `docker-compose` and `quadlet`):
//! compiles the guest crates their `provider.yaml` name for wasm32, turns them into components,
//! packs each manifest (with the shared catalog its `definitionsFrom` names) and its components
//! into one bundle with the same writer `opm provider pack` uses (the crate
//! `opm-bundle-format`), and generates `embedded_provider.rs`, which embeds those bundles for
//! `src/embedded.rs` to load like any bundle file.
//!
//! It also precompiles every embedded component for the target, with the engine settings the
//! sandbox uses (the crate `opm-codegen`), and generates `embedded_code.rs`, which embeds that
//! code by component digest: a render of an embedded provider loads it instead of compiling, on
//! the first run as on every other.
//!
//! It also generates the C bindings of `wit/` (`c_bindings.rs`) that `opm transformer new --lang c`
//! writes into a new project.
//!
//! A transformer's `component` field names its crate's artifact: `kubernetes_transformers.wasm`
//! is the crate `kubernetes-transformers` of the `transformers/` workspace.

use std::path::PathBuf;

// The guests' build helper, shared with `tests/build.rs`: it lives with the guest workspace
// it builds, which is not a member of this one.
#[path = "../transformers/build_support.rs"]
mod build_support;

use opm_bundle_format as format;
use opm_codegen as codegen;

/// The providers built into the binary, the default first: each a directory of `providers/`.
const EMBEDDED: &[&str] = &["kubernetes", "docker-compose", "quadlet"];

fn main() -> anyhow::Result<()> {
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let providers_dir = build_support::workspace().join("../providers");
    println!("cargo:rerun-if-changed={}", providers_dir.display());
    build_support::rerun_if_guests_change(&["kubernetes", "compose", "quadlet", "module"]);

    let mut manifests = Vec::new();
    for name in EMBEDDED {
        let dir = providers_dir.join(name);
        let manifest_path = dir.join("provider.yaml");
        if !manifest_path.is_file() {
            continue;
        }
        let mut raw: serde_json::Value =
            serde_saphyr::from_str(&std::fs::read_to_string(&manifest_path)?)?;
        if let Some(from) = raw
            .as_object_mut()
            .and_then(|m| m.remove("definitionsFrom"))
        {
            let from = from.as_str().unwrap_or_default();
            let catalog = serde_saphyr::from_str(&std::fs::read_to_string(dir.join(from))?)?;
            format::take_definitions(&mut raw, catalog).map_err(|e| {
                anyhow::anyhow!("{}: definitionsFrom {from}: {e}", manifest_path.display())
            })?;
        }
        manifests.push((*name, manifest_path, raw));
    }
    let mut files: Vec<String> = manifests
        .iter()
        .flat_map(|(_, _, raw)| component_files(raw))
        .collect();
    files.sort();
    files.dedup();
    let packages: Vec<String> = files
        .iter()
        .map(|file| file.trim_end_matches(".wasm").replace('_', "-"))
        .collect();
    let packages: Vec<&str> = packages.iter().map(String::as_str).collect();
    let components = build_support::build_components(&packages, &out_dir)?;

    let mut generated = String::from(
        "/// The bundles of the providers built into the binary, by name, the default first.\npub static PROVIDERS: &[(&str, &[u8])] = &[\n",
    );
    for (name, manifest_path, raw) in manifests {
        let packed = format::pack(raw, &components)
            .map_err(|e| anyhow::anyhow!("packing {}: {e}", manifest_path.display()))?;
        let bundle = out_dir.join(format!("{name}.opmb"));
        std::fs::write(&bundle, &packed.bytes)?;
        generated.push_str(&format!(
            "    // {}\n    ({name:?}, include_bytes!({:?})),\n",
            packed.digest,
            bundle.display().to_string()
        ));
    }
    generated.push_str("];\n");
    std::fs::write(out_dir.join("embedded_provider.rs"), generated)?;
    precompile(&components, &out_dir)?;
    c_bindings(&build_support::workspace().join("../wit"), &out_dir)
}

/// The zstd level of the precompiled code in a release build: the highest, as it is compressed
/// once per build and decompressed at every render (at the same speed whatever the level).
const RELEASE_LEVEL: i32 = 19;

/// The zstd level in any other build (the tests', the README's first render): level 19 takes 27
/// seconds of one core per build here, on the path of everything that waits for opm-runtime;
/// level 3 takes a fifth of a second, for about twice the bytes in the binary.
const DEV_LEVEL: i32 = 3;

/// Precompiles `components` for the target and generates `embedded_code.rs`: `CODE`, each
/// component's BLAKE3 (hex), its code compressed, and the code's length, sorted by digest, and
/// `BASE`, the entry compressed alone that is the others' dictionary.
fn precompile(
    components: &std::collections::BTreeMap<String, Vec<u8>>,
    out_dir: &std::path::Path,
) -> anyhow::Result<()> {
    let mut generated = String::from(
        "/// The code of the embedded providers' components, precompiled by build.rs for this\n/// target: each component's BLAKE3 (hex), its code compressed with zstd, and the code's\n/// length, sorted by digest.\npub static CODE: &[(&str, &[u8], usize)] = &[\n",
    );
    let base = {
        use anyhow::Context as _;
        let target = std::env::var("TARGET").context("cargo sets TARGET")?;
        let level = match std::env::var("PROFILE").as_deref() {
            Ok("release") => RELEASE_LEVEL,
            _ => DEV_LEVEL,
        };
        let dir = out_dir.join("precompiled");
        std::fs::create_dir_all(&dir)?;
        let engine = match codegen::portable_config(&target).and_then(|c| wasmtime::Engine::new(&c))
        {
            Ok(engine) => Some(engine),
            Err(error) => {
                // A target Cranelift does not compile for: the components are compiled at run
                // time, as an installed provider's are.
                println!(
                    "cargo:warning=not precompiling the embedded providers for {target}: {error:#}"
                );
                None
            }
        };
        let mut code: Vec<(String, Vec<u8>)> = Vec::new();
        for (file, bytes) in components.iter().filter(|_| engine.is_some()) {
            let engine = engine.as_ref().expect("filtered");
            let digest = blake3::hash(bytes).to_hex().to_string();
            if code.iter().any(|(known, _)| *known == digest) {
                continue;
            }
            let compiled = engine
                .precompile_component(bytes)
                .map_err(|e| anyhow::anyhow!("precompiling {file}: {e:#}"))?;
            code.push((digest, compiled));
        }
        code.sort();
        // Compressed, the largest alone and every other with it as a dictionary: the
        // components share most of their code (serde_json, the SDK, the common crates), which
        // the dictionary holds once. 40 MB of code become about 6 (benches/RESULTS.md).
        let base = code
            .iter()
            .enumerate()
            .max_by_key(|(index, (_, compiled))| (compiled.len(), std::cmp::Reverse(*index)))
            .map_or(0, |(index, _)| index);
        let mut with_base = match code.get(base) {
            Some((_, base)) => Some(
                zstd::bulk::Compressor::with_dictionary(level, base)
                    .context("a zstd compressor")?,
            ),
            None => None,
        };
        for (index, (digest, compiled)) in code.iter().enumerate() {
            let compressed = match &mut with_base {
                Some(compressor) if index != base => compressor.compress(compiled)?,
                _ => zstd::bulk::compress(compiled, level)?,
            };
            let path = dir.join(format!("{digest}.cwasm.zst"));
            std::fs::write(&path, compressed)?;
            generated.push_str(&format!(
                "    ({digest:?}, include_bytes!({:?}), {}),\n",
                path.display().to_string(),
                compiled.len()
            ));
        }
        base
    };
    generated.push_str(&format!(
        "];\n/// The entry of `CODE` that every other was compressed with as a dictionary.\npub static BASE: usize = {base};\n"
    ));
    std::fs::write(out_dir.join("embedded_code.rs"), generated)?;
    Ok(())
}

/// Writes the C bindings of `wit` into `out_dir/c-bindings` and generates `c_bindings.rs`:
/// `FILES`, each file's name and bytes.
fn c_bindings(wit: &std::path::Path, out_dir: &std::path::Path) -> anyhow::Result<()> {
    use std::fmt::Write as _;
    let dir = out_dir.join("c-bindings");
    std::fs::create_dir_all(&dir)?;
    let mut generated = String::from(
        "/// The C bindings of wit/, generated by wit-bindgen-c.\npub static FILES: &[(&str, &[u8])] = &[\n",
    );
    for (name, contents) in generate_c_bindings(wit)? {
        let path = dir.join(&name);
        std::fs::write(&path, contents)?;
        writeln!(
            generated,
            "    ({name:?}, include_bytes!({:?})),",
            path.display().to_string()
        )?;
    }
    generated.push_str("];\n");
    std::fs::write(out_dir.join("c_bindings.rs"), generated)?;
    Ok(())
}

/// The `component` of each transformer and of the renderer of a provider manifest. Read from
/// the parsed manifest, not by a line scan: a schema may hold a `component:` property of its
/// own.
fn component_files(raw: &serde_json::Value) -> Vec<String> {
    raw["transformers"]
        .as_object()
        .into_iter()
        .flat_map(|transformers| transformers.values())
        .chain(raw.get("renderer"))
        .filter_map(|holder| holder["component"].as_str())
        .map(str::to_owned)
        .collect()
}

/// The C bindings of `transformer-world` in `wit`, generated by wit-bindgen-c: each file's name
/// and contents (a header, its source, and an object file that carries the world's component
/// type for wit-component).
fn generate_c_bindings(wit: &std::path::Path) -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    use anyhow::Context as _;
    use wit_bindgen_core::wit_parser::Resolve;
    let mut resolve = Resolve::default();
    let (package, _) = resolve.push_dir(wit)?;
    let world = resolve.select_world(&[package], Some("transformer-world"))?;
    let mut files = wit_bindgen_core::Files::default();
    wit_bindgen_c::Opts::default()
        .build()
        .generate(&mut resolve, world, &mut files)
        .context("generating C bindings of wit/")?;
    Ok(files
        .iter()
        .map(|(name, contents)| (name.to_owned(), contents.to_vec()))
        .collect())
}
