//! [`Component`], the typed view of the JSON a transformer receives (described in the
//! repository's `docs/module-format.md`).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::TransformError;

/// One component of a module, flattened by the host: its name, effective labels, the FQNs of
/// what it attaches, and `spec`, each attached definition's value keyed by its field.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Component {
    metadata: Metadata,
    #[serde(default)]
    resources: Vec<String>,
    #[serde(default)]
    traits: Vec<String>,
    #[serde(default)]
    policies: Vec<String>,
    #[serde(default)]
    spec: Map<String, Value>,
    #[serde(default)]
    defaults: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
struct Metadata {
    name: String,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
}

impl Component {
    /// Parses the JSON the host passes to `transform`.
    pub fn from_json(json: &str) -> Result<Self, TransformError> {
        serde_json::from_str(json)
            .map_err(|e| TransformError::invalid(format!("malformed component document: {e}")))
    }

    /// Builds a component from a JSON value, as a unit test does.
    pub fn from_value(value: Value) -> Result<Self, TransformError> {
        serde_json::from_value(value)
            .map_err(|e| TransformError::invalid(format!("malformed component document: {e}")))
    }

    /// The component's name, unique in its module.
    pub fn name(&self) -> &str {
        &self.metadata.name
    }

    /// Effective labels: those of every attached definition, overlaid by the component's own.
    pub fn labels(&self) -> &BTreeMap<String, String> {
        &self.metadata.labels
    }

    /// One effective label.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.metadata.labels.get(key).map(String::as_str)
    }

    /// The component's annotations.
    pub fn annotations(&self) -> &BTreeMap<String, String> {
        &self.metadata.annotations
    }

    /// FQNs of the attached resources.
    pub fn resources(&self) -> &[String] {
        &self.resources
    }

    /// FQNs of the attached traits.
    pub fn traits(&self) -> &[String] {
        &self.traits
    }

    /// FQNs of the attached policies.
    pub fn policies(&self) -> &[String] {
        &self.policies
    }

    /// Whether the component attaches the resource, trait or policy `fqn`.
    pub fn attaches(&self, fqn: &str) -> bool {
        [&self.resources, &self.traits, &self.policies]
            .iter()
            .any(|list| list.iter().any(|f| f == fqn))
    }

    /// Every attached definition's value, keyed by its spec field (`container`, `expose`, …).
    pub fn spec(&self) -> &Map<String, Value> {
        &self.spec
    }

    /// Defaults of the transformer's optional definitions that the component does not attach.
    pub fn defaults(&self) -> &Map<String, Value> {
        &self.defaults
    }

    /// The spec field `field` as `T`; `None` when the component does not have it.
    pub fn field<T: DeserializeOwned>(&self, field: &str) -> Result<Option<T>, TransformError> {
        self.spec
            .get(field)
            .map(|value| decode(field, value))
            .transpose()
    }

    /// The spec field `field` as `T`; an `invalid-component` error when it is missing.
    pub fn require<T: DeserializeOwned>(&self, field: &str) -> Result<T, TransformError> {
        self.field(field)?.ok_or_else(|| {
            TransformError::invalid(format!("component {:?} has no spec.{field}", self.name()))
        })
    }

    /// The spec field `field`, or else the transformer's default for it, as `T`.
    pub fn field_or_default<T: DeserializeOwned>(
        &self,
        field: &str,
    ) -> Result<Option<T>, TransformError> {
        match self.spec.get(field).or_else(|| self.defaults.get(field)) {
            Some(value) => decode(field, value).map(Some),
            None => Ok(None),
        }
    }
}

fn decode<T: DeserializeOwned>(field: &str, value: &Value) -> Result<T, TransformError> {
    T::deserialize(value).map_err(|e| TransformError::invalid(format!("spec.{field}: {e}")))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn api() -> Component {
        Component::from_value(json!({
            "metadata": {"name": "api", "labels": {"core.opm.dev/workload-type": "stateless"}},
            "resources": ["opm.dev/resources/workload@v1#Container"],
            "traits": ["opm.dev/traits/scaling@v1#Replicas"],
            "spec": {"container": {"image": "nginx:1.27"}, "replicas": 3},
            "defaults": {"restartPolicy": {"policy": "Always"}},
        }))
        .expect("valid component")
    }

    #[test]
    fn reads_names_labels_and_attachments() {
        let c = api();
        assert_eq!(c.name(), "api");
        assert_eq!(c.label("core.opm.dev/workload-type"), Some("stateless"));
        assert!(c.attaches("opm.dev/traits/scaling@v1#Replicas"));
        assert!(!c.attaches("opm.dev/traits/network@v1#Expose"));
    }

    #[test]
    fn typed_fields_and_defaults() {
        let c = api();
        assert_eq!(c.field::<u32>("replicas"), Ok(Some(3)));
        assert_eq!(c.field::<u32>("missing"), Ok(None));
        let policy: Value = c.field_or_default("restartPolicy").unwrap().unwrap();
        assert_eq!(policy["policy"], "Always");
    }

    #[test]
    fn missing_and_mistyped_fields_are_invalid_component_errors() {
        let c = api();
        let missing = c.require::<Value>("expose").unwrap_err();
        assert_eq!(
            missing,
            TransformError::invalid("component \"api\" has no spec.expose")
        );
        let mistyped = c.field::<String>("replicas").unwrap_err();
        assert!(
            matches!(mistyped, TransformError::InvalidComponent(m) if m.starts_with("spec.replicas:"))
        );
    }

    #[test]
    fn a_document_without_a_name_is_refused() {
        let err = Component::from_value(json!({"metadata": {}})).unwrap_err();
        assert!(err.to_string().contains("missing field `name`"), "{err}");
    }
}
