//! What the Kubernetes transformers share, so that every workload kind renders pods the same way.
//!
//! - [`object_metadata`] and [`selector_labels`]: names, namespace and labels of every resource;
//! - [`container`] and [`image_reference`]: an OPM container (DESIGN §4.6) as a Kubernetes one;
//! - [`pod`]: the pod template of a workload (containers, sidecars, init containers, volumes,
//!   probes, scheduling, security, service account, restart policy) and the workload settings
//!   that several kinds share (replicas, update strategy);
//! - [`job`]: the Job spec a Job and a CronJob share;
//! - [`storage`]: persistent storage as claims or claim templates;
//! - [`ports`]: the ports a component exposes through its Service.
//!
//! OPM keeps collections that users override one entry at a time (ports, env, mounts, volumes) as
//! maps keyed by name; Kubernetes wants lists. Maps are walked in key order, so output is
//! deterministic whatever order the module wrote them in.

pub mod job;
pub mod pod;
pub mod ports;
pub mod storage;

mod container;

use std::collections::BTreeMap;

use opm_guest::{Component, Context, Map, Value, json};

pub use container::{container, image_reference};

/// The label that ties a component's pods to its workload and services.
pub const NAME_LABEL: &str = "app.kubernetes.io/name";

/// The label that selects the workload transformer of a component.
pub const WORKLOAD_TYPE_LABEL: &str = "core.opm.dev/workload-type";

/// Labels every pod of `component` carries and every selector matches.
pub fn selector_labels(component: &Component) -> Value {
    json!({ NAME_LABEL: component.name() })
}

/// The context's labels (module labels and tracking labels) plus the selector labels, in key
/// order.
pub fn resource_labels(component: &Component, context: &Context) -> Value {
    let mut labels: BTreeMap<&str, &str> = context
        .labels
        .iter()
        .map(|(key, value)| (key.as_str(), value.as_str()))
        .collect();
    labels.insert(NAME_LABEL, component.name());
    json!(labels)
}

/// `metadata` for a resource named `name` rendered from `component`: the context's labels (module
/// labels and tracking labels) plus the selector labels, in the render namespace.
pub fn object_metadata(component: &Component, context: &Context, name: &str) -> Value {
    let mut metadata = Map::new();
    metadata.insert("name".into(), Value::from(name));
    if !context.namespace.is_empty() {
        metadata.insert("namespace".into(), Value::from(context.namespace.as_str()));
    }
    metadata.insert("labels".into(), resource_labels(component, context));
    if !component.annotations().is_empty() {
        metadata.insert("annotations".into(), json!(component.annotations()));
    }
    Value::Object(metadata)
}

/// The entries of a JSON map in key order, whatever order they were written in. A value that is
/// not a map has no entries.
pub fn sorted_entries(map: Option<&Value>) -> Vec<(&String, &Value)> {
    let mut entries: Vec<_> = map
        .and_then(Value::as_object)
        .map(|map| map.iter().collect())
        .unwrap_or_default();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    entries
}

/// Copies the fields `keys` of `from`, those it has, into `to`, in the order of `keys`.
pub fn copy_fields(from: &Value, to: &mut Map<String, Value>, keys: &[&str]) {
    for key in keys {
        if let Some(value) = from.get(*key).filter(|value| !value.is_null()) {
            to.insert((*key).to_owned(), value.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_carries_context_labels_and_the_selector_label() {
        let component = Component::from_value(json!({"metadata": {"name": "api"}})).unwrap();
        let context = Context {
            namespace: "shop".into(),
            labels: [("team".to_owned(), "payments".to_owned())].into(),
            ..Context::default()
        };
        let metadata = object_metadata(&component, &context, "api-headless");
        assert_eq!(
            metadata,
            json!({"name": "api-headless", "namespace": "shop",
                   "labels": {"app.kubernetes.io/name": "api", "team": "payments"}})
        );
        let keys: Vec<&String> = metadata["labels"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["app.kubernetes.io/name", "team"]);
    }

    #[test]
    fn sorted_entries_walk_maps_in_key_order() {
        let map = json!({"b": 2, "a": 1});
        let keys: Vec<&str> = sorted_entries(Some(&map))
            .into_iter()
            .map(|(key, _)| key.as_str())
            .collect();
        assert_eq!(keys, ["a", "b"]);
        assert!(sorted_entries(Some(&json!(3))).is_empty());
    }
}
