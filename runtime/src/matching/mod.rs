//! Matching components to transformers (DESIGN §4.5), natively, before any WebAssembly runs.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

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
