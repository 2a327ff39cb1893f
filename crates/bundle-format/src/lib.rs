//! The bundle file format, and the code that writes it (documented for users in
//! `providers/README.md`, "Bundles").
//!
//! A bundle (`NAME-VERSION.opmb`) is an uncompressed POSIX ustar archive holding, in this order:
//!
//! - `manifest/<hex>.json`: the canonical manifest, where `<hex>` is its BLAKE3, which is the
//!   bundle digest. Every transformer's `component` is `components/<hex>.wasm` and its `digest`
//!   is `blake3:<hex>`, so this one digest pins every byte of the bundle.
//! - `components/<hex>.wasm`, one per distinct component, sorted, named by the BLAKE3 of its
//!   bytes.
//!
//! Every header is the same but for name and size (mode 0644, owner 0:0, mtime 0), so packing
//! the same manifest and components twice gives identical bytes.
//!
//! A crate of its own, with no dependency on the rest of opm (only `tar`, `blake3` and
//! `serde_json`), so that `runtime/build.rs` packs the embedded providers with this very writer
//! (then loaded like any other bundle) without compiling the host. `opm-core` reads bundles
//! (`bundle`) and re-exports this crate as `bundle::format`, and [`json`] as its `json`.

pub mod json;

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// The folder of component entries.
pub const COMPONENTS_DIR: &str = "components";
/// The folder of the manifest entry.
pub const MANIFEST_DIR: &str = "manifest";
/// The file extension of bundles.
pub const EXTENSION: &str = "opmb";
/// The largest manifest entry a bundle may hold.
pub const MAX_MANIFEST_BYTES: u64 = 4 << 20;
/// The largest component entry a bundle may hold.
pub const MAX_COMPONENT_BYTES: u64 = 64 << 20;
/// The largest bundle file.
pub const MAX_BUNDLE_BYTES: u64 = 256 << 20;
/// The most entries a bundle may hold.
pub const MAX_ENTRIES: usize = 1024;

/// `<hex>` of BLAKE3 of `bytes`.
pub fn hex_digest(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

/// The entry path of the component whose BLAKE3 is `hex`.
pub fn component_entry(hex: &str) -> String {
    format!("{COMPONENTS_DIR}/{hex}.wasm")
}

/// The entry path of the manifest whose BLAKE3 (the bundle digest) is `hex`.
pub fn manifest_entry(hex: &str) -> String {
    format!("{MANIFEST_DIR}/{hex}.json")
}

/// The canonical text of a JSON value: object keys sorted at every level, two-space indentation,
/// a final newline.
pub fn canonical_json(value: &Value) -> Vec<u8> {
    let mut bytes =
        serde_json::to_vec_pretty(&json::sorted(value)).expect("a JSON value serializes");
    bytes.push(b'\n');
    bytes
}

/// A bundle written by [`pack`].
#[derive(Debug, Clone)]
pub struct Packed {
    /// The bundle file's bytes.
    pub bytes: Vec<u8>,
    /// The canonical manifest.
    pub manifest: Vec<u8>,
    /// `blake3:<hex>` of the canonical manifest.
    pub digest: String,
}

/// Takes the `definitions` map of `catalog` (a shared catalog file, `providers/catalog/`) into
/// `manifest`'s own: what a provider source's `definitionsFrom` asks for. A definition in both
/// is an error. The catalog's `version`, when it has one, becomes the manifest's
/// `catalog.version` (the catalog it follows), which the manifest may also state itself, the
/// same; a catalog file holds nothing but `version` and `definitions`.
pub fn take_definitions(manifest: &mut Value, catalog: Value) -> Result<(), String> {
    let Value::Object(mut catalog) = catalog else {
        return Err("the catalog is not a map".into());
    };
    let Some(Value::Object(shared)) = catalog.remove("definitions") else {
        return Err("the catalog has no `definitions` map".into());
    };
    let version = match catalog.remove("version") {
        None => None,
        Some(Value::String(version)) => Some(version),
        Some(_) => return Err("the catalog's `version` is not a string".into()),
    };
    if !catalog.is_empty() {
        // Not quoted: a manifest may name any file of its directory.
        return Err("a catalog holds only `version` and `definitions`".into());
    }
    let manifest = manifest
        .as_object_mut()
        .ok_or("the manifest is not a map")?;
    if let Some(version) = version {
        let stated = manifest
            .get("catalog")
            .and_then(|catalog| catalog.get("version"))
            .and_then(Value::as_str);
        match stated {
            Some(stated) if stated != version => {
                return Err(format!(
                    "the manifest says catalog.version {stated}, which is not the catalog's \
                     version"
                ));
            }
            Some(_) => {}
            None => {
                manifest.insert(
                    "catalog".into(),
                    Value::Object(Map::from_iter([("version".into(), Value::String(version))])),
                );
            }
        }
    }
    let own = manifest
        .entry("definitions")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or("`definitions` is not a map")?;
    for (fqn, definition) in shared {
        if own.contains_key(&fqn) {
            return Err(format!(
                "{fqn} is in the catalog and in the manifest's own definitions"
            ));
        }
        own.insert(fqn, definition);
    }
    own.sort_keys();
    Ok(())
}

/// Packs a manifest (as JSON) and the components its transformers and renderer name into a
/// bundle.
///
/// `components` maps each transformer's `component` value, as the manifest has it, to the
/// component's bytes. Each transformer's (and the renderer's) `component` and `digest` are rewritten to the entry
/// name and digest of its bytes; a `digest` already present must match them.
pub fn pack(mut manifest: Value, components: &BTreeMap<String, Vec<u8>>) -> Result<Packed, String> {
    let mut entries: BTreeMap<String, &[u8]> = BTreeMap::new();
    let mut seal = |what: &str, holder: &mut Map<String, Value>| -> Result<(), String> {
        let path = holder
            .get("component")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{what} has no `component`"))?;
        let bytes = components
            .get(path)
            .ok_or_else(|| format!("{what}: component {path:?} was not given"))?;
        let hex = hex_digest(bytes);
        let digest = format!("blake3:{hex}");
        if let Some(written) = holder.get("digest").and_then(Value::as_str)
            && written != digest
        {
            return Err(format!(
                "{what}: component {path:?} has digest {digest}, but the manifest says {written}"
            ));
        }
        holder.insert("component".into(), Value::String(component_entry(&hex)));
        holder.insert("digest".into(), Value::String(digest));
        entries.insert(component_entry(&hex), bytes);
        Ok(())
    };
    let transformers = manifest
        .get_mut("transformers")
        .and_then(Value::as_object_mut)
        .ok_or("the manifest has no `transformers` map")?;
    for (fqn, transformer) in transformers.iter_mut() {
        let transformer = transformer
            .as_object_mut()
            .ok_or_else(|| format!("transformer {fqn} is not a map"))?;
        seal(&format!("transformer {fqn}"), transformer)?;
    }
    if let Some(renderer) = manifest.get_mut("renderer") {
        let renderer = renderer.as_object_mut().ok_or("`renderer` is not a map")?;
        seal("the renderer", renderer)?;
    }
    let canonical = canonical_json(&manifest);
    let hex = hex_digest(&canonical);
    let mut builder = tar::Builder::new(Vec::new());
    let mut append = |path: &str, data: &[u8]| -> Result<(), String> {
        let mut header = tar::Header::new_ustar();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_mode(0o644);
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(0);
        header.set_size(data.len() as u64);
        builder
            .append_data(&mut header, path, data)
            .map_err(|e| format!("writing entry {path}: {e}"))
    };
    append(&manifest_entry(&hex), &canonical)?;
    for (path, data) in &entries {
        append(path, data)?;
    }
    let bytes = builder
        .into_inner()
        .map_err(|e| format!("finishing the archive: {e}"))?;
    Ok(Packed {
        bytes,
        manifest: canonical,
        digest: format!("blake3:{hex}"),
    })
}
