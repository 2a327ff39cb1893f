//! The providers built into a binary: bundles packed when it was built, by the same writer as
//! `opm provider pack` (`opm-bundle-format`), and loaded like any other bundle. `opm-runtime`
//! makes its table in `runtime/build.rs` (`kubernetes`, the default, `docker-compose` and
//! `quadlet`) and passes it to [`super::load_set`] and the other loaders.

use super::{DEFAULT_PROVIDER, Provider, ProviderError, provider_of, set};
use crate::bundle;

/// What the origin of a provider built into opm starts with (`embedded:kubernetes`).
pub const EMBEDDED_ORIGIN: &str = "embedded:";

/// The bundles of the providers built into a binary, by name, the default
/// ([`DEFAULT_PROVIDER`]) among them.
#[derive(Debug, Clone, Copy)]
pub struct Embedded {
    providers: &'static [(&'static str, &'static [u8])],
}

impl Embedded {
    /// The table `providers`, each a name and its bundle's bytes. The bundles must be part of
    /// the program, made by the bundle writer from the repository's own sources: their digests
    /// are not computed again, their components are not copied, and their manifests are not
    /// validated again (a test validates every embedded manifest).
    pub const fn new(providers: &'static [(&'static str, &'static [u8])]) -> Self {
        Self { providers }
    }

    /// The names of the providers built in, in the table's order.
    pub fn names(&self) -> impl Iterator<Item = &'static str> {
        self.providers.iter().map(|(name, _)| *name)
    }

    /// The bytes of the bundle of the provider `name`, if one is built in.
    pub fn bundle_of(&self, name: &str) -> Option<&'static [u8]> {
        self.providers
            .iter()
            .find(|(embedded, _)| *embedded == name)
            .map(|(_, bytes)| *bytes)
    }

    /// Loads the default provider: a bundle like any other.
    pub fn load(&self) -> Result<Provider, ProviderError> {
        self.load_named(DEFAULT_PROVIDER)
    }

    /// Loads the provider `name` built in.
    pub fn load_named(&self, name: &str) -> Result<Provider, ProviderError> {
        let origin = format!("{EMBEDDED_ORIGIN}{name}");
        let bytes = self
            .bundle_of(name)
            .ok_or_else(|| ProviderError::Unknown(name.to_owned()))?;
        let bundle = bundle::read_embedded(&origin, bytes)?;
        provider_of(origin, bundle, false)
    }

    /// The provider built in for the platform `format` (its `core.opm.dev/format` label): the
    /// default provider when `format` is `None` or no other states it.
    pub fn load_for(&self, format: Option<&str>) -> Result<Provider, ProviderError> {
        if let Some(format) = format {
            for name in self.names().filter(|name| *name != DEFAULT_PROVIDER) {
                let provider = self.load_named(name)?;
                if provider
                    .manifest
                    .metadata
                    .labels
                    .get(set::FORMAT_LABEL)
                    .map(String::as_str)
                    == Some(format)
                {
                    return Ok(provider);
                }
            }
        }
        self.load()
    }
}
