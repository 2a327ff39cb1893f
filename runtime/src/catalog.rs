//! The catalog of definitions built into opm — `providers/catalog/definitions.yaml`, the very
//! file the embedded providers take with `definitionsFrom:` — with its version, and how a
//! provider's definitions compare with it.
//!
//! [`TEXT`] is the file as written; `opm provider export-catalog` writes it out ([`exported`])
//! so that a provider outside the repository takes the same definitions with `definitionsFrom:`
//! rather than a copy by hand. [`embedded`] is it parsed: its `version` (semver, bumped
//! by the rules in the file's header and `providers/README.md#the-catalog-and-its-version`) and
//! the [`digest`](Catalog::digest) of its definitions. [`RELEASED`] records the digest of every
//! version, and a test fails when the definitions change and the version does not.
//! [`Catalog::compare`] says which of the catalog's definitions a provider holds as they are,
//! holds changed, or lacks, and which are its own: what `opm provider check` reports.
//!
//! ```
//! let catalog = opm_runtime::catalog::embedded();
//! assert_eq!(catalog.version, opm_runtime::catalog::RELEASED.last().unwrap().0);
//! let compared = catalog.compare(&opm_runtime::embedded::load().unwrap().manifest.definitions);
//! assert!(compared.differ.is_empty() && compared.missing.is_empty());
//! ```

use std::sync::OnceLock;

pub use opm_core::provider::catalog::{Catalog, CatalogError, Comparison};

/// `providers/catalog/definitions.yaml`, as this opm was built with it.
pub const TEXT: &str = include_str!("../../providers/catalog/definitions.yaml");

/// Every version of the catalog and the [`digest`](Catalog::digest) of its definitions, oldest
/// first; the last is [`TEXT`]'s. A change of the definitions adds a line here and bumps
/// `version` in the file.
pub const RELEASED: &[(&str, &str)] = &[(
    "1.0.0",
    "blake3:0900fbb548bb37d1ace74e8c49547c6e78865ebdcc42b84a50ec85ef707e85ac",
)];

/// The catalog built into this opm ([`TEXT`]), parsed.
pub fn embedded() -> &'static Catalog {
    static EMBEDDED: OnceLock<Catalog> = OnceLock::new();
    EMBEDDED.get_or_init(|| {
        Catalog::parse("embedded catalog", TEXT).expect("a test parses the embedded catalog")
    })
}

/// What `opm provider export-catalog` writes: a header that says what the file is, which opm
/// wrote it, its version and digest and how to use it, then [`TEXT`] byte for byte.
pub fn exported() -> String {
    let catalog = embedded();
    format!(
        "# opm's catalog of definitions, version {version} ({digest}), written by `opm provider \
         export-catalog` of opm {opm}.\n\
         # Take it into a provider with `definitionsFrom: catalog.yaml` in its provider.yaml: the \
         provider then\n\
         # records `catalog: {{version: {version}}}`, and `opm provider check DIR` says when opm's \
         catalog has moved on.\n\
         # Keep it as it is; add the provider's own definitions in provider.yaml.\n\
         #\n{TEXT}",
        version = catalog.version,
        digest = catalog.digest,
        opm = opm_core::provider::OPM_VERSION,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The catalog's definitions are those its version was released with: a change of them
    /// without a new version (and a new line in `RELEASED`) fails here, with the digest to
    /// record.
    #[test]
    fn the_catalog_version_moves_with_its_definitions() {
        let catalog = embedded();
        let (version, digest) = RELEASED.last().expect("a version is released");
        assert_eq!(
            (catalog.version.as_str(), catalog.digest.as_str()),
            (*version, *digest),
            "providers/catalog/definitions.yaml is version {} with definitions {}: when the \
             definitions changed, bump its `version` (major, minor or patch: its header says \
             which) and add (version, digest) to RELEASED in runtime/src/catalog.rs",
            catalog.version,
            catalog.digest,
        );
        let versions: Vec<Vec<u64>> = RELEASED
            .iter()
            .map(|(version, _)| {
                version
                    .split('.')
                    .map(|part| part.parse().expect("a release is MAJOR.MINOR.PATCH"))
                    .collect()
            })
            .collect();
        assert!(
            versions.windows(2).all(|pair| pair[0] < pair[1]),
            "RELEASED goes up"
        );
    }

    /// What `export-catalog` writes parses as the same catalog, and every embedded provider
    /// holds exactly its definitions and records its version.
    #[test]
    fn the_exported_catalog_is_the_embedded_providers_catalog() {
        let exported = Catalog::parse("exported", &exported()).expect("parses");
        let catalog = embedded();
        assert_eq!(
            (&exported.version, &exported.digest),
            (&catalog.version, &catalog.digest)
        );
        for name in crate::embedded::PROVIDERS.names() {
            let provider = crate::embedded::PROVIDERS.load_named(name).expect("loads");
            let compared = catalog.compare(&provider.manifest.definitions);
            assert_eq!(compared.same.len(), catalog.definitions.len(), "{name}");
            assert_eq!(
                provider
                    .manifest
                    .catalog
                    .as_ref()
                    .map(|c| c.version.as_str()),
                Some(catalog.version.as_str()),
                "{name}"
            );
        }
    }
}
