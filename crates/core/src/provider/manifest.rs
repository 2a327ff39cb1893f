//! The provider manifest, `provider.yaml` (`providers/README.md#the-manifest`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::calls::limits::{Caps, Limits, parse_duration, parse_size};
use crate::definitions::{DefinitionSpec, Fqn};

/// A parsed `provider.yaml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ProviderManifest {
    /// Always `core.opm.dev/v1`.
    pub api_version: String,
    /// Always `Provider`.
    pub kind: String,
    /// Name, version and the rest.
    pub metadata: ProviderMetadata,
    /// Per-call limits the provider asks for; the host caps them.
    #[serde(default)]
    pub limits: LimitsSpec,
    /// Definitions the provider's transformers name, keyed by FQN.
    #[serde(default)]
    pub definitions: BTreeMap<String, DefinitionSpec>,
    /// Transformers keyed by FQN (`apiVersion#name`).
    pub transformers: BTreeMap<String, TransformerSpec>,
    /// The component that writes the render's files (`wit/transformer.wit`, `renderer`). A
    /// provider without one adds transformers to a set whose renderer is another provider's,
    /// or else the embedded default provider's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renderer: Option<RendererSpec>,
    /// What this provider knows it cannot honour, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unhandled: Vec<Unhandled>,
    /// The version of opm's shared catalog of definitions its definitions were taken from or
    /// written against: stated here, or taken from the `version` of the catalog file that
    /// `definitionsFrom` names. `opm provider check` compares it with the catalog of the opm
    /// it runs in (`providers/README.md#the-catalog-and-its-version`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog: Option<CatalogVersion>,
}

/// `catalog` of a provider manifest: which version of opm's catalog of definitions
/// (`providers/catalog/definitions.yaml`, `opm provider export-catalog`) it follows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CatalogVersion {
    /// The catalog's version (semver).
    pub version: String,
}

/// The longest name, and version, a renderer may have: they are in every message it causes.
pub const MAX_RENDERER_NAME: usize = 128;

/// `renderer` of a provider manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RendererSpec {
    /// What it is called (`Kubernetes List Renderer`).
    pub name: String,
    /// Its own version (semver), apart from the provider's.
    pub version: String,
    /// What it writes.
    #[serde(default)]
    pub description: String,
    /// The kinds whose content is secret, as checksum references name them (`KIND` in the
    /// core group, else `GROUP/KIND`): a checksum of one is stretched with Argon2id
    /// (`docs/rendering.md`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secret_kinds: Vec<String>,
    /// Limits of the render call; the host caps them.
    #[serde(default)]
    pub limits: LimitsSpec,
    /// Path of the component inside the provider source or bundle.
    pub component: String,
    /// `blake3:<hex>` of the component, written by `opm provider pack`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

/// An entry of `unhandled`: definitions this provider's platform cannot honour, or components
/// (by label) it cannot run, with the reason a user is told.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Unhandled {
    /// Definitions (FQNs): attached to a component, each is reported unhandled with `reason`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub definitions: Vec<String>,
    /// Label pairs: a component that has them all and matches no transformer is left out with
    /// `reason` instead of failing the plan.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Why, and what to do instead.
    pub reason: String,
}

/// `metadata` of a provider manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ProviderMetadata {
    /// Provider name, lowercase with hyphens (`kubernetes`).
    pub name: String,
    /// What the provider targets.
    #[serde(default)]
    pub description: String,
    /// Provider version (semver).
    pub version: String,
    /// Oldest opm that may load it (semver).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_version: Option<String>,
    /// Labels for provider discovery.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

impl ProviderMetadata {
    /// The file name of this provider's bundle: `NAME-VERSION.opmb`.
    pub fn bundle_file_name(&self) -> String {
        format!(
            "{}-{}.{}",
            self.name,
            self.version,
            crate::bundle::format::EXTENSION
        )
    }

    /// The name and version a signature of this provider's bundle must vouch for.
    pub fn binding(&self) -> crate::bundle::signature::Binding {
        crate::bundle::signature::Binding {
            name: self.name.clone(),
            version: self.version.clone(),
        }
    }
}

/// `limits` of a provider manifest, as written (`64Mi`, `2s`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LimitsSpec {
    /// Fuel units per transform call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fuel: Option<u64>,
    /// Linear memory per call, with a unit (`64Mi`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
    /// Wall-clock time per call, with a unit (`2s`, `500ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
}

impl LimitsSpec {
    /// Whether the units are ones this opm reads; `field` names the map in errors.
    fn check(&self, field: &str) -> Result<(), String> {
        if let Some(memory) = &self.memory {
            parse_size(memory).map_err(|e| format!("{field}.memory: {e}"))?;
        }
        if let Some(timeout) = &self.timeout {
            parse_duration(timeout).map_err(|e| format!("{field}.timeout: {e}"))?;
        }
        Ok(())
    }

    /// The limits of the provider's calls: what it asks for, else the host default, never more
    /// than `caps`.
    pub fn limits(&self, caps: &Caps) -> Result<Limits, String> {
        self.limits_over(Limits::default(), caps)
    }

    /// [`Self::limits`] with `defaults` for what the provider does not ask.
    pub fn limits_over(&self, defaults: Limits, caps: &Caps) -> Result<Limits, String> {
        let memory = match &self.memory {
            Some(text) => parse_size(text).map_err(|e| format!("limits.memory: {e}"))?,
            None => defaults.memory,
        };
        let timeout = match &self.timeout {
            Some(text) => parse_duration(text).map_err(|e| format!("limits.timeout: {e}"))?,
            None => defaults.timeout,
        };
        Ok(Limits {
            fuel: self.fuel.unwrap_or(defaults.fuel).min(caps.fuel),
            memory: memory.min(caps.memory),
            timeout: timeout.min(caps.timeout),
            ..defaults
        })
    }
}

/// One transformer entry of a provider manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TransformerSpec {
    /// What it renders.
    #[serde(default)]
    pub description: String,
    /// Labels of the transformer itself.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Label pairs that must all be in the component's effective labels.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub required_labels: BTreeMap<String, String>,
    /// Labels the transformer reads when present.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub optional_labels: BTreeMap<String, String>,
    /// Resource FQNs that must all be attached.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_resources: Vec<String>,
    /// Resource FQNs the transformer handles when attached.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub optional_resources: Vec<String>,
    /// Trait FQNs that must all be attached.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_traits: Vec<String>,
    /// Trait FQNs the transformer handles when attached.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub optional_traits: Vec<String>,
    /// Policy FQNs that must all be attached.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_policies: Vec<String>,
    /// Policy FQNs the transformer handles when attached.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub optional_policies: Vec<String>,
    /// Conditions a matched component must meet, checked by the plan before anything runs, so
    /// that `opm mod vet` refuses what the transformer would refuse.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub validations: Vec<Validation>,
    /// Path of the component inside the provider source or bundle.
    pub component: String,
    /// `blake3:<hex>` of the component, written by `opm provider pack`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

/// A condition on the JSON a transformer receives (`docs/module-format.md`): a JSON Schema it must
/// satisfy, and what to tell the module's author when it does not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Validation {
    /// Why the transformer refuses such a component, and what to do instead.
    pub message: String,
    /// The schema the whole input (`metadata`, `spec`, `defaults`, …) must satisfy.
    pub schema: serde_json::Value,
}

impl Validation {
    /// The compiled schema, or why it does not compile.
    pub fn compile(&self) -> Result<jsonschema::Validator, String> {
        jsonschema::Validator::new(&self.schema).map_err(|error| error.to_string())
    }
}

impl TransformerSpec {
    /// What a component needs to match this transformer (serde's `flatten` would lose
    /// `deny_unknown_fields`, so the manifest spells the fields out and this gathers them).
    pub fn requirements(&self) -> Requirements {
        Requirements {
            required_labels: self.required_labels.clone(),
            optional_labels: self.optional_labels.clone(),
            required_resources: self.required_resources.clone(),
            optional_resources: self.optional_resources.clone(),
            required_traits: self.required_traits.clone(),
            optional_traits: self.optional_traits.clone(),
            required_policies: self.required_policies.clone(),
            optional_policies: self.optional_policies.clone(),
        }
    }
}

impl ProviderManifest {
    /// Checks what serde does not: `apiVersion` and `kind`, that every transformer key and
    /// requirement is an FQN (`apiVersion#name`), that `metadata.name` is a DNS label and
    /// `metadata.version` semver (both become file names), and that
    /// `limits` have units this opm reads. `minVersion` is compared with this opm by
    /// [`validate`](super::validate).
    pub fn check(&self) -> Result<(), String> {
        if self.api_version != "core.opm.dev/v1" {
            return Err(format!(
                "apiVersion is {:?}; expected core.opm.dev/v1",
                self.api_version
            ));
        }
        if self.kind != "Provider" {
            return Err(format!("kind is {:?}; expected Provider", self.kind));
        }
        // The name and version become file names (`NAME-VERSION.opmb`, `.opm/providers/NAME/
        // VERSION/`), so they are checked before anything is built from them.
        if !crate::names::is_dns_label(&self.metadata.name) {
            return Err(format!(
                "metadata.name {:?} is not a provider name: lowercase letters, digits and \
                 hyphens, at most 63, starting and ending with a letter or digit",
                self.metadata.name
            ));
        }
        semver::Version::parse(&self.metadata.version).map_err(|e| {
            format!(
                "metadata.version {:?} is not a semantic version: {e}",
                self.metadata.version
            )
        })?;
        if let Some(catalog) = &self.catalog {
            semver::Version::parse(&catalog.version).map_err(|e| {
                format!(
                    "catalog.version {:?} is not a semantic version: {e}",
                    catalog.version
                )
            })?;
        }
        for fqn in self.definitions.keys() {
            Fqn::parse(fqn).map_err(|e| format!("definitions: {e}"))?;
        }
        for (fqn, transformer) in &self.transformers {
            Fqn::parse(fqn).map_err(|e| format!("transformers: {e}"))?;
            let r = transformer.requirements();
            let lists = [
                ("requiredResources", &r.required_resources),
                ("optionalResources", &r.optional_resources),
                ("requiredTraits", &r.required_traits),
                ("optionalTraits", &r.optional_traits),
                ("requiredPolicies", &r.required_policies),
                ("optionalPolicies", &r.optional_policies),
            ];
            for (field, list) in lists {
                for name in list {
                    Fqn::parse(name).map_err(|e| format!("transformers.{fqn}.{field}: {e}"))?;
                }
            }
            for (index, validation) in transformer.validations.iter().enumerate() {
                if validation.message.trim().is_empty() {
                    return Err(format!(
                        "transformers.{fqn}.validations[{index}].message is empty"
                    ));
                }
                validation.compile().map_err(|e| {
                    format!("transformers.{fqn}.validations[{index}].schema does not compile: {e}")
                })?;
            }
        }
        self.limits.check("limits")?;
        if let Some(renderer) = &self.renderer {
            // Its name is in every refusal and failure it causes.
            if renderer.name.len() > MAX_RENDERER_NAME || renderer.version.len() > MAX_RENDERER_NAME
            {
                return Err(format!(
                    "renderer.name and renderer.version are at most {MAX_RENDERER_NAME} bytes \
                     each"
                ));
            }
            semver::Version::parse(&renderer.version).map_err(|e| {
                format!(
                    "renderer.version {:?} is not a semantic version: {e}",
                    renderer.version
                )
            })?;
            renderer.limits.check("renderer.limits")?;
        }
        for (index, entry) in self.unhandled.iter().enumerate() {
            if entry.reason.trim().is_empty() {
                return Err(format!("unhandled[{index}].reason is empty"));
            }
            if entry.definitions.is_empty() == entry.labels.is_empty() {
                return Err(format!(
                    "unhandled[{index}] names definitions or labels (one of the two)"
                ));
            }
            for fqn in &entry.definitions {
                Fqn::parse(fqn).map_err(|e| format!("unhandled[{index}].definitions: {e}"))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Security review (2026-11): names copied into every message had no length limit.
    #[test]
    fn a_renderer_name_longer_than_the_limit_is_refused() {
        let manifest = |name: &str| -> ProviderManifest {
            serde_json::from_value(serde_json::json!({
                "apiVersion": "core.opm.dev/v1", "kind": "Provider",
                "metadata": {"name": "p", "version": "0.1.0"},
                "transformers": {},
                "renderer": {"name": name, "version": "1.0.0", "component": "r.wasm"},
            }))
            .unwrap()
        };
        assert!(manifest("Lines").check().is_ok());
        let long = manifest(&"x".repeat(1 << 20)).check().unwrap_err();
        assert!(long.contains("at most 128 bytes"), "{long}");
        assert!(
            long.len() < 200,
            "the error quotes the name: {} bytes",
            long.len()
        );
    }

    #[test]
    fn a_provider_asks_and_the_host_caps() {
        let ask = LimitsSpec {
            fuel: Some(5_000),
            memory: Some("2Gi".into()),
            timeout: None,
        };
        let caps = Caps {
            fuel: 1_000,
            ..Caps::default()
        };
        let limits = ask.limits(&caps).unwrap();
        assert_eq!(limits.fuel, 1_000);
        assert_eq!(limits.memory, Caps::default().memory);
        assert_eq!(limits.timeout, Limits::default().timeout);
        let bad = LimitsSpec {
            memory: Some("lots".into()),
            ..ask
        };
        assert!(bad.limits(&caps).unwrap_err().starts_with("limits.memory:"));
    }
}

/// What a transformer requires of a component, and what it optionally handles.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Requirements {
    /// Label pairs that must all be in the component's effective labels.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub required_labels: BTreeMap<String, String>,
    /// Labels the transformer reads when present.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub optional_labels: BTreeMap<String, String>,
    /// Resource FQNs that must all be attached.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_resources: Vec<String>,
    /// Resource FQNs the transformer handles when attached.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub optional_resources: Vec<String>,
    /// Trait FQNs that must all be attached.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_traits: Vec<String>,
    /// Trait FQNs the transformer handles when attached.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub optional_traits: Vec<String>,
    /// Policy FQNs that must all be attached.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_policies: Vec<String>,
    /// Policy FQNs the transformer handles when attached.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub optional_policies: Vec<String>,
}
