//! `opm provider pack`: from a provider source directory (a `provider.yaml` whose transformers'
//! `component` paths are relative to it) to one bundle file.
//!
//! The manifest is parsed strictly and validated; each component is read, turned into a
//! component if it is a core module built with wit-bindgen, and checked
//! ([`component::check`]); then [`format::pack`] writes the canonical
//! manifest with every digest and the components named by digest.

use std::collections::BTreeMap;
use std::path::Path;

use crate::bundle::component::{self, ComponentInfo};
use crate::bundle::format::{self, MAX_COMPONENT_BYTES, Packed};
use crate::provider::{self, ProviderError, ProviderManifest};

/// A packed bundle and what went into it.
#[derive(Debug, Clone)]
pub struct PackOutput {
    /// The bundle.
    pub packed: Packed,
    /// The validated manifest, as the source has it.
    pub manifest: ProviderManifest,
    /// Per transformer FQN, what its component imports and exports.
    pub components: BTreeMap<String, ComponentInfo>,
    /// The transformers whose core modules were turned into components.
    pub componentized: Vec<String>,
}

impl PackOutput {
    /// The conventional file name of the bundle, `NAME-VERSION.opmb`.
    pub fn file_name(&self) -> String {
        self.manifest.metadata.bundle_file_name()
    }
}

/// Packs the provider source directory `dir`.
pub fn pack_dir(dir: &Path) -> Result<PackOutput, ProviderError> {
    let (origin, raw, manifest) = provider::read_source_manifest(dir)?;
    provider::validate(&origin, &manifest)?;
    let invalid = |message: String| ProviderError::Manifest {
        origin: origin.clone(),
        message,
    };

    let mut sources: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut infos = BTreeMap::new();
    let mut componentized = Vec::new();
    for (fqn, spec) in &manifest.transformers {
        let fail = |reason: component::ComponentError| ProviderError::Component {
            origin: origin.clone(),
            transformer: fqn.clone(),
            component: spec.component.clone(),
            reason,
        };
        let mut bytes = provider::read_inside(dir, &spec.component, MAX_COMPONENT_BYTES)?;
        if wasmparser::Parser::is_core_wasm(&bytes) {
            bytes = component::componentize(&bytes).map_err(|e| {
                fail(component::ComponentError::Invalid(format!(
                    "it is a core module that cannot be made a component: {e:#}"
                )))
            })?;
            componentized.push(fqn.clone());
        }
        let info = component::check(&bytes).map_err(fail)?;
        infos.insert(fqn.clone(), info);
        sources.insert(spec.component.clone(), bytes);
    }
    if let Some(spec) = &manifest.renderer {
        let bytes = provider::read_inside(dir, &spec.component, MAX_COMPONENT_BYTES)?;
        component::check_renderer(&bytes).map_err(|reason| ProviderError::Component {
            origin: origin.clone(),
            transformer: provider::RENDERER.into(),
            component: spec.component.clone(),
            reason,
        })?;
        sources.insert(spec.component.clone(), bytes);
    }
    let packed = format::pack(raw, &sources).map_err(invalid)?;
    Ok(PackOutput {
        packed,
        manifest,
        components: infos,
        componentized,
    })
}
