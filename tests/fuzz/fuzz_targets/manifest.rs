//! Fuzz target `manifest`: parsing and validating `provider.yaml`
//! ([`opm_core::provider::parse_manifest`], [`opm_core::provider::validate`]).
//!
//! A manifest that validates must also survive `opm provider pack`: packed into a bundle (with
//! stand-in bytes for each component, which packing does not look at) it must read back, and
//! the bundle's manifest must be the same manifest with each `component` and `digest` (the
//! transformers' and the renderer's) rewritten to the bundle's entries. Otherwise a provider that loads from its source directory would not
//! load once packed.

#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use opm_core::bundle::{self, format};
use opm_core::provider::{self, ProviderManifest};

fuzz_target!(|data: &[u8]| {
    let manifest = match provider::parse_manifest("provider.yaml", data) {
        Ok(manifest) => manifest,
        Err(error) => {
            let _ = error.to_string();
            return;
        }
    };
    if let Err(error) = provider::validate("provider.yaml", &manifest) {
        let _ = error.to_string();
        return;
    }
    for transformer in manifest.transformers.values() {
        let _ = transformer.requirements();
    }
    check_packs(data, &manifest);
});

/// Packs the validated manifest `data` as `opm provider pack` does and reads the bundle back.
fn check_packs(data: &[u8], manifest: &ProviderManifest) {
    let text = std::str::from_utf8(data).expect("parse_manifest accepted it, so it is UTF-8");
    let raw: serde_json::Value =
        serde_saphyr::from_str(text).expect("a manifest that parses is a YAML value");
    let components: BTreeMap<String, Vec<u8>> = manifest
        .transformers
        .values()
        .map(|t| &t.component)
        .chain(manifest.renderer.as_ref().map(|r| &r.component))
        .map(|component| (component.clone(), component.clone().into_bytes()))
        .collect();
    let packed = format::pack(raw, &components).expect("a valid manifest packs");
    let bundle = bundle::read("packed.opmb", &packed.bytes).expect("a packed bundle reads back");
    let unpacked: ProviderManifest =
        serde_json::from_slice(&bundle.manifest).expect("a packed manifest parses");
    let mut expected = manifest.clone();
    for transformer in expected.transformers.values_mut() {
        let hex = format::hex_digest(&components[&transformer.component]);
        transformer.component = format::component_entry(&hex);
        transformer.digest = Some(format!("blake3:{hex}"));
    }
    if let Some(renderer) = &mut expected.renderer {
        let hex = format::hex_digest(&components[&renderer.component]);
        renderer.component = format::component_entry(&hex);
        renderer.digest = Some(format!("blake3:{hex}"));
    }
    assert_eq!(
        unpacked, expected,
        "the packed manifest differs from the source"
    );
    provider::validate("packed.opmb", &unpacked).expect("a packed manifest validates");
}
