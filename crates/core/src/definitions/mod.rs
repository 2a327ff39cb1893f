//! Definitions: the resources, traits and policies a component attaches
//! (`docs/module-format.md#definitions`).
//!
//! A definition is named by its FQN (`opm.dev/resources/workload@v1#Container`), has a kind, the
//! spec field it fills, labels that it gives every component attaching it, defaults, and a JSON
//! Schema for its value. Provider manifests and modules declare definitions in the same shape,
//! [`DefinitionSpec`].
//!
//! - [`fqn`] parses FQNs and derives a definition's default spec field;
//! - [`catalog`] checks the definitions of a provider and a module together, resolves the names a
//!   module writes (FQN or short name) and validates attached values against their schemas;
//! - [`validated`] remembers between renders which values were found valid, so that a render
//!   of what an earlier one validated compiles no schema.
//!
//! ```
//! use opm_core::definitions::{Catalog, DefinitionKind, DefinitionSource, DefinitionSpec};
//!
//! let replicas: DefinitionSpec = serde_json::from_value(serde_json::json!({
//!     "kind": "Trait", "defaults": 1, "schema": {"type": "integer", "minimum": 0}
//! })).unwrap();
//! let source = DefinitionSource::Provider("kubernetes".into());
//! let (catalog, errors) = Catalog::build([("opm.dev/traits/scaling@v1#Replicas", &replicas, source)]);
//! assert!(errors.is_empty());
//! let definition = catalog.resolve("Replicas").unwrap();
//! assert_eq!((definition.kind, definition.field.as_str()), (DefinitionKind::Trait, "replicas"));
//! let (value, violations) = definition.apply(&serde_json::json!(-1));
//! assert_eq!((value, violations[0].message.as_str()), (serde_json::json!(-1), "the value is less than the minimum of 0"));
//! ```

pub mod catalog;
pub mod fqn;
pub mod validated;

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

pub use catalog::{
    Catalog, Definition, DefinitionError, DefinitionSource, SchemaViolation, Unresolved,
};
pub use fqn::{Fqn, FqnError, default_field};

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

impl DefinitionKind {
    /// Every kind, in the order components list them.
    pub const ALL: [Self; 3] = [Self::Resource, Self::Trait, Self::Policy];

    /// The section of a component that attaches definitions of this kind (`resources`).
    pub fn section(self) -> &'static str {
        match self {
            Self::Resource => "resources",
            Self::Trait => "traits",
            Self::Policy => "policies",
        }
    }

    /// The kind whose section is `section`.
    pub fn from_section(section: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.section() == section)
    }
}

impl fmt::Display for DefinitionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Resource => "resource",
            Self::Trait => "trait",
            Self::Policy => "policy",
        })
    }
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
