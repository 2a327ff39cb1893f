//! The shared catalog of definitions as a file: `version` (semver) and `definitions`, as
//! `providers/catalog/definitions.yaml` is written and `opm provider export-catalog` writes it
//! (`providers/README.md#the-catalog-and-its-version`).
//!
//! A provider takes one with `definitionsFrom:` (`bundle::format::take_definitions` merges it and
//! records its version as the manifest's `catalog.version`). [`Catalog::parse`] reads one, with
//! the [`digest`](Catalog::digest) of its definitions; [`Catalog::compare`] says which of its
//! definitions a provider holds as they are, holds changed or lacks, and which are the
//! provider's own.
//!
//! ```
//! use opm_core::provider::catalog::Catalog;
//!
//! let catalog = Catalog::parse("catalog.yaml", "version: 1.2.0\ndefinitions:\n  opm.dev/traits/scaling@v1#Replicas: {kind: Trait, schema: {type: integer}}\n").unwrap();
//! assert_eq!(catalog.version, "1.2.0");
//! let compared = catalog.compare(&Default::default());
//! assert_eq!(compared.missing, ["opm.dev/traits/scaling@v1#Replicas"]);
//! ```

use std::collections::BTreeMap;

use serde::Serialize;

use crate::definitions::DefinitionSpec;

/// A catalog file: its version and its definitions.
#[derive(Debug, Clone)]
pub struct Catalog {
    /// Its `version` (semver).
    pub version: String,
    /// Its definitions, by FQN.
    pub definitions: BTreeMap<String, DefinitionSpec>,
    /// `blake3:<hex>` of the canonical JSON of its `definitions` map (keys sorted, as a bundle's
    /// manifest is written): what identifies its content whatever its comments and anchors.
    pub digest: String,
}

/// How a provider's definitions compare with a [`Catalog`]'s, each list sorted by FQN.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Comparison {
    /// The catalog's definitions the provider holds exactly as the catalog has them.
    pub same: Vec<String>,
    /// The catalog's definitions the provider holds with another kind, field, label, default,
    /// description or schema.
    pub differ: Vec<String>,
    /// The catalog's definitions the provider does not hold: a module that attaches one does
    /// not vet with it alone.
    pub missing: Vec<String>,
    /// The provider's definitions that are not in the catalog.
    pub own: Vec<String>,
}

/// Why a catalog file could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CatalogError {
    /// It is not YAML of the catalog's shape.
    #[error("{origin}: not a catalog of definitions (`version` and `definitions`): {message}")]
    Shape {
        /// Where it came from.
        origin: String,
        /// What is wrong, with line and column.
        message: String,
    },
    /// Its `version` is not semver.
    #[error("{origin}: version {version:?} is not a semantic version")]
    Version {
        /// Where it came from.
        origin: String,
        /// What it says.
        version: String,
    },
}

/// The shape of a catalog file.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    version: String,
    definitions: serde_json::Map<String, serde_json::Value>,
}

impl Catalog {
    /// Parses the catalog file `text`; `origin` names it in errors.
    pub fn parse(origin: &str, text: &str) -> Result<Self, CatalogError> {
        let shape = |message: String| CatalogError::Shape {
            origin: origin.to_owned(),
            message,
        };
        let file: File =
            serde_saphyr::from_str(text).map_err(|e| shape(crate::yaml::message(&e)))?;
        if semver::Version::parse(&file.version).is_err() {
            return Err(CatalogError::Version {
                origin: origin.to_owned(),
                version: file.version,
            });
        }
        let canonical = crate::bundle::format::canonical_json(&serde_json::Value::Object(
            file.definitions.clone(),
        ));
        let digest = format!("blake3:{}", blake3::hash(&canonical).to_hex());
        let definitions = file
            .definitions
            .into_iter()
            .map(|(fqn, value)| {
                serde_json::from_value(value)
                    .map(|spec| (fqn.clone(), spec))
                    .map_err(|e| shape(format!("definition {fqn}: {e}")))
            })
            .collect::<Result<_, _>>()?;
        Ok(Self {
            version: file.version,
            definitions,
            digest,
        })
    }

    /// How `definitions` (a provider's) compare with this catalog's.
    pub fn compare(&self, definitions: &BTreeMap<String, DefinitionSpec>) -> Comparison {
        let mut compared = Comparison::default();
        for (fqn, spec) in &self.definitions {
            match definitions.get(fqn) {
                Some(theirs) if theirs == spec => compared.same.push(fqn.clone()),
                Some(_) => compared.differ.push(fqn.clone()),
                None => compared.missing.push(fqn.clone()),
            }
        }
        compared.own = definitions
            .keys()
            .filter(|fqn| !self.definitions.contains_key(*fqn))
            .cloned()
            .collect();
        compared
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file with a field of another name, or a version that is not semver, is refused by
    /// name.
    #[test]
    fn a_catalog_of_another_shape_is_refused() {
        let error = Catalog::parse("x.yaml", "version: 1.0.0\ndefinitions: {}\nextra: 1\n")
            .unwrap_err()
            .to_string();
        assert!(error.starts_with("x.yaml: not a catalog"), "{error}");
        let error = Catalog::parse("x.yaml", "version: one\ndefinitions: {}\n")
            .unwrap_err()
            .to_string();
        assert_eq!(error, "x.yaml: version \"one\" is not a semantic version");
    }
}
