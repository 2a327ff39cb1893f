//! Providers: a manifest plus the WebAssembly components of its transformers (DESIGN §5).
//!
//! [`load`] takes what a user passes to `--provider`: the name of the embedded default provider
//! (`kubernetes`) or a provider source directory (a `provider.yaml` whose `component` paths are
//! relative to it). Bundle files and installed providers come with the bundle format.

pub mod manifest;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use manifest::{LimitsSpec, ProviderManifest, ProviderMetadata, TransformerSpec};

/// The name of the provider built into the `opm` binary.
pub const DEFAULT_PROVIDER: &str = "kubernetes";

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/embedded_provider.rs"));
}

/// A loaded provider: its manifest and the bytes of every transformer's component.
#[derive(Debug, Clone)]
pub struct Provider {
    /// The parsed manifest.
    pub manifest: ProviderManifest,
    /// Component bytes keyed by transformer FQN.
    pub components: BTreeMap<String, Arc<[u8]>>,
    /// Where it came from, for messages (`embedded:kubernetes`, a path).
    pub origin: String,
}

/// Why a provider could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// The reference is neither the embedded provider's name nor an existing path.
    #[error(
        "unknown provider {0:?}: pass a provider source directory, or omit --provider for the embedded \"{DEFAULT_PROVIDER}\" provider"
    )]
    Unknown(String),
    /// A file of the provider could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// The manifest is not a valid `provider.yaml`.
    #[error("invalid provider manifest {origin}: {message}")]
    Manifest {
        /// The manifest's path or the embedded provider's name.
        origin: String,
        /// What is wrong, with line and column.
        message: String,
    },
    /// A transformer names a component the provider does not hold.
    #[error(
        "provider {origin}: transformer {transformer} names component {component:?}, which is not in the provider"
    )]
    MissingComponent {
        /// The provider.
        origin: String,
        /// The transformer FQN.
        transformer: String,
        /// The component path it names.
        component: String,
    },
}

/// Loads the provider `reference` names: `kubernetes` (embedded) or a source directory.
pub fn load(reference: &str) -> Result<Provider, ProviderError> {
    let path = Path::new(reference);
    if path.is_dir() {
        return load_dir(path);
    }
    if reference == DEFAULT_PROVIDER {
        return load_embedded();
    }
    Err(ProviderError::Unknown(reference.to_owned()))
}

/// Loads the default provider built into this binary.
pub fn load_embedded() -> Result<Provider, ProviderError> {
    let origin = format!("embedded:{DEFAULT_PROVIDER}");
    let files: BTreeMap<&str, &'static [u8]> = embedded::FILES.iter().copied().collect();
    let manifest_bytes = files.get("provider.yaml").copied().unwrap_or_default();
    assemble(origin, manifest_bytes, |component| {
        files.get(component).map(|bytes| Ok(Arc::from(*bytes)))
    })
}

/// Loads a provider source directory: `DIR/provider.yaml` plus the components it names.
pub fn load_dir(dir: &Path) -> Result<Provider, ProviderError> {
    let manifest_path = dir.join("provider.yaml");
    let manifest_bytes = read(&manifest_path)?;
    assemble(
        manifest_path.display().to_string(),
        &manifest_bytes,
        |component| {
            let path = dir.join(component);
            path.is_file().then(|| read(&path).map(Arc::from))
        },
    )
}

fn read(path: &Path) -> Result<Vec<u8>, ProviderError> {
    std::fs::read(path).map_err(|source| ProviderError::Read {
        path: path.to_owned(),
        source,
    })
}

/// Parses a manifest and fetches each transformer's component with `fetch`, which returns `None`
/// for a component the provider does not hold.
fn assemble(
    origin: String,
    manifest_bytes: &[u8],
    mut fetch: impl FnMut(&str) -> Option<Result<Arc<[u8]>, ProviderError>>,
) -> Result<Provider, ProviderError> {
    let manifest = parse_manifest(&origin, manifest_bytes)?;
    let mut components = BTreeMap::new();
    for (fqn, transformer) in &manifest.transformers {
        let bytes =
            fetch(&transformer.component).ok_or_else(|| ProviderError::MissingComponent {
                origin: origin.clone(),
                transformer: fqn.clone(),
                component: transformer.component.clone(),
            })??;
        components.insert(fqn.clone(), bytes);
    }
    Ok(Provider {
        manifest,
        components,
        origin,
    })
}

/// Parses `provider.yaml` text.
pub fn parse_manifest(origin: &str, bytes: &[u8]) -> Result<ProviderManifest, ProviderError> {
    let invalid = |message: String| ProviderError::Manifest {
        origin: origin.to_owned(),
        message,
    };
    let text = std::str::from_utf8(bytes).map_err(|e| invalid(format!("not UTF-8: {e}")))?;
    serde_saphyr::from_str(text).map_err(|e| invalid(e.to_string()))
}
