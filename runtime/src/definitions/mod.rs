//! Definitions: the resources, traits and policies a component attaches (DESIGN §4.2).
//!
//! A definition is named by its FQN (`opm.dev/resources/workload@v1#Container`), has a kind, the
//! spec field it fills, labels that it gives every component attaching it, defaults, and a JSON
//! Schema for its value. Provider manifests and modules declare definitions in the same shape,
//! [`DefinitionSpec`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The kind of a definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum DefinitionKind {
    /// Something a component is made of (a container, volumes, a config map).
    Resource,
    /// Behaviour attached to a component (replicas, exposure, health checks).
    Trait,
    /// A rule governing a component (network policy).
    Policy,
}

/// One definition as written in `provider.yaml` or in a module's `definitions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DefinitionSpec {
    /// Whether this is a resource, trait or policy.
    pub kind: DefinitionKind,
    /// What the definition is for, shown by `inspect` and `vet`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The spec field the value fills; default: the name after `#` in lowerCamelCase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// Labels every component attaching this definition inherits.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Value the user's value is merged over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defaults: Option<serde_json::Value>,
    /// JSON Schema the merged value must satisfy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<serde_json::Value>,
}
