//! What the Kubernetes transformers share, so that every workload kind renders pods the same way.
//!
//! - [`object_metadata`], [`selector_labels`] and [`template_labels`]: names, namespace and
//!   labels of every resource; selectors match the module (`app.kubernetes.io/instance`) and the
//!   component (`app.kubernetes.io/name`), and pod templates leave out the module version;
//! - [`container`], [`image_reference`]: an OPM container (`docs/vocabulary.md`) for Kubernetes;
//! - [`pod`]: the pod template of a workload (containers, sidecars, init containers, volumes,
//!   probes, scheduling, security, service account, restart policy) and the workload settings
//!   that several kinds share (replicas, update strategy);
//! - [`job`]: the Job spec a Job and a CronJob share;
//! - [`storage`]: persistent storage as claims or claim templates;
//! - [`ports`]: the ports a component exposes through its Service;
//! - [`meta`]: the `labels` and `annotations` a trait or resource adds to the objects it renders;
//! - [`data`]: the text and base64 data maps of ConfigMaps and Secrets;
//! - [`gateway`]: the Gateways and the Service a Gateway API route attaches to and sends to.
//!
//! What every provider reads the same way from the module — the image reference, the order of
//! `env`, HealthCheck's probes, the mounts of PersistentStorage, a Volumes entry's source,
//! [`sorted_entries`], [`WORKLOAD_TYPE_LABEL`] — is the platform-neutral `opm_module_common`'s.
//!
//! OPM keeps collections that users override one entry at a time (ports, env, mounts, volumes) as
//! maps keyed by name; Kubernetes wants lists. Maps are walked in key order, so output is
//! deterministic whatever order the module wrote them in.

pub mod data;
pub mod gateway;
pub mod job;
pub mod meta;
pub mod pod;
pub mod ports;
pub mod selector;
pub mod storage;

mod container;

use std::collections::BTreeMap;

use opm_guest::{Component, Context, Map, Value, json};

pub use container::{container, image_reference};
pub use opm_module_common::{WORKLOAD_TYPE_LABEL, mounts_of, sorted_entries};

/// The label that ties a component's pods to its workload and services.
pub const NAME_LABEL: &str = "app.kubernetes.io/name";

/// The label that ties a component's pods to the instance of the module they belong to (the
/// context's name: the module's, or the `--instance` rendered), so that two modules, or two
/// instances of one, with a component of one name in one namespace never select each other's
/// pods.
pub const INSTANCE_LABEL: &str = "app.kubernetes.io/instance";

/// The tracking label with the module version. The host puts it on every resource; pod
/// templates leave it out, so that a version bump neither restarts every workload nor changes
/// the immutable template of a Job.
pub const MODULE_VERSION_LABEL: &str = "module.opmodel.dev/version";

/// Kinds that live in no namespace: Kubernetes' built-in cluster-scoped kinds and the Gateway
/// API's GatewayClass, sorted. (The host keeps the same list to compare resources by the
/// namespace they land in.)
pub const CLUSTER_SCOPED: &[&str] = &[
    "APIService",
    "CSIDriver",
    "CSINode",
    "CertificateSigningRequest",
    "ClusterRole",
    "ClusterRoleBinding",
    "ComponentStatus",
    "CustomResourceDefinition",
    "FlowSchema",
    "GatewayClass",
    "IngressClass",
    "MutatingAdmissionPolicy",
    "MutatingAdmissionPolicyBinding",
    "MutatingWebhookConfiguration",
    "Namespace",
    "Node",
    "PersistentVolume",
    "PriorityClass",
    "PriorityLevelConfiguration",
    "RuntimeClass",
    "StorageClass",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "ValidatingWebhookConfiguration",
    "VolumeAttachment",
];

/// Whether `kind` is one of the [`CLUSTER_SCOPED`] kinds.
pub fn is_cluster_scoped(kind: &str) -> bool {
    CLUSTER_SCOPED.binary_search(&kind).is_ok()
}

/// Labels every pod of `component` carries and every selector matches: the module (instance)
/// and the component (name).
pub fn selector_labels(component: &Component, context: &Context) -> Value {
    component_selector_labels(component.name(), context)
}

/// The selector labels of the pods of the component `name` of the module being rendered, such
/// as a peer that a network policy names.
pub fn component_selector_labels(name: &str, context: &Context) -> Value {
    json!(selector_label_map(name, context))
}

/// The context's labels (module labels and tracking labels) plus the selector labels, in key
/// order.
pub fn resource_labels(component: &Component, context: &Context) -> Value {
    json!(label_map(component, context))
}

/// The labels of a pod template (and of a CronJob's job template): [`resource_labels`] without
/// the module version ([`MODULE_VERSION_LABEL`]), which would otherwise roll every pod on each
/// release.
pub fn template_labels(component: &Component, context: &Context) -> Value {
    let mut labels = label_map(component, context);
    labels.remove(MODULE_VERSION_LABEL);
    json!(labels)
}

/// The selector labels of the component `name` of the module of `context`.
fn selector_label_map<'a>(name: &'a str, context: &'a Context) -> BTreeMap<&'a str, &'a str> {
    BTreeMap::from([(INSTANCE_LABEL, context.name.as_str()), (NAME_LABEL, name)])
}

/// The context's labels overlaid by the selector labels of `component`.
fn label_map<'a>(component: &'a Component, context: &'a Context) -> BTreeMap<&'a str, &'a str> {
    let mut labels: BTreeMap<&str, &str> = context
        .labels
        .iter()
        .map(|(key, value)| (key.as_str(), value.as_str()))
        .collect();
    labels.extend(selector_label_map(component.name(), context));
    labels
}

/// The context of the transformers' unit tests: module `shop` at version 1.2.0, whose tracking
/// labels carry that version.
#[doc(hidden)]
pub fn test_context() -> Context {
    Context {
        name: "shop".into(),
        version: "1.2.0".into(),
        labels: [(MODULE_VERSION_LABEL.to_owned(), "1.2.0".to_owned())].into(),
        ..Context::default()
    }
}

/// [`test_context`] rendering a second instance, `shop-eu`, whose objects' names the
/// transformers prefix with `shop-eu-`.
#[doc(hidden)]
pub fn test_instance_context() -> Context {
    opm_module_common::test_second_instance(test_context())
}

/// `metadata` for a resource named `name` (for a name of the component's own, the
/// [`Context::object_name`], so that two instances do not collide) rendered from `component`: the context's labels (module
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

/// Copies the fields `keys` of `from`, those it has, into `to`, in the order of `keys`.
pub fn copy_fields(from: &Value, to: &mut Map<String, Value>, keys: &[&str]) {
    for key in keys {
        if let Some(value) = from.get(*key).filter(|value| !value.is_null()) {
            to.insert((*key).to_owned(), value.clone());
        }
    }
}

/// The name of the object a definition's value `value` renders: its `name` exactly, when it pins
/// one (to adopt an existing install's object, as a chart's `fullnameOverride`), else the
/// component's with the instance prefix.
pub fn pinned_name(component: &Component, context: &Context, value: &Value) -> String {
    match value.get("name").and_then(Value::as_str) {
        Some(pinned) => pinned.to_owned(),
        None => context.object_name(component.name()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_scoped_kinds_are_sorted_for_bisection() {
        assert!(CLUSTER_SCOPED.is_sorted());
        assert!(is_cluster_scoped("ClusterRole") && !is_cluster_scoped("Role"));
    }

    fn context() -> Context {
        Context {
            name: "shop".into(),
            namespace: "prod".into(),
            labels: [
                ("team".to_owned(), "payments".to_owned()),
                (MODULE_VERSION_LABEL.to_owned(), "1.2.0".to_owned()),
            ]
            .into(),
            ..Context::default()
        }
    }

    #[test]
    fn metadata_carries_context_labels_and_the_selector_labels() {
        let component = Component::from_value(json!({"metadata": {"name": "api"}})).unwrap();
        let metadata = object_metadata(&component, &context(), "api-headless");
        assert_eq!(
            metadata,
            json!({"name": "api-headless", "namespace": "prod",
                   "labels": {"app.kubernetes.io/instance": "shop", "app.kubernetes.io/name": "api",
                              "module.opmodel.dev/version": "1.2.0", "team": "payments"}})
        );
        let keys: Vec<&String> = metadata["labels"].as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "app.kubernetes.io/instance",
                "app.kubernetes.io/name",
                "module.opmodel.dev/version",
                "team"
            ]
        );
    }

    #[test]
    fn selectors_name_the_module_and_the_component() {
        let component = Component::from_value(json!({"metadata": {"name": "api"}})).unwrap();
        let selector =
            json!({"app.kubernetes.io/instance": "shop", "app.kubernetes.io/name": "api"});
        assert_eq!(selector_labels(&component, &context()), selector);
        assert_eq!(component_selector_labels("api", &context()), selector);
        let other_module = Context {
            name: "blog".into(),
            ..context()
        };
        assert_ne!(selector_labels(&component, &other_module), selector);
    }

    #[test]
    fn template_labels_leave_out_the_module_version() {
        let component = Component::from_value(json!({"metadata": {"name": "api"}})).unwrap();
        assert_eq!(
            template_labels(&component, &context()),
            json!({"app.kubernetes.io/instance": "shop", "app.kubernetes.io/name": "api",
                   "team": "payments"})
        );
    }
}
