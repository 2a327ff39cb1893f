//! What the docker-compose provider's transformers and its renderer share.
//!
//! A transformer returns *compose resources*: opm's envelope around one entry of a top-level
//! section of a compose file.
//!
//! ```yaml
//! apiVersion: compose.opm.dev/v1
//! kind: Service            # Service, Volume, Config, Secret or Network
//! metadata:
//!   name: api              # the entry's key under services:, volumes:, ...
//!   labels: {...}          # the module's and opm's labels; the renderer copies them
//! spec: {...}              # the entry's body, as the Compose Specification has it
//! ```
//!
//! Every string of a spec is raw text, what the container or Docker should get: the renderer
//! escapes each `$` of the finished file as `$$` ([`expand`]), so that nothing of the module's
//! — a transformer's output or a patch's — is interpolated from the environment of `docker
//! compose`. A transformer never escapes.
//!
//! The host checks the envelope, adds its tracking labels and applies the module's patches; the
//! renderer (`compose-renderer`) merges every resource into one `compose.yaml`. What a
//! transformer cannot know because it sees one component — the values of another component's
//! ConfigMap or Secret — it leaves to the renderer in the [`extension`] `x-opm` of a service.
//!
//! - [`resource`], [`object_labels`]: the envelope;
//! - [`extension`]: what a service asks the renderer to resolve;
//! - [`expand`]: Kubernetes' `$(VAR)` expansion and compose's `$$` escape;
//! - [`quantity`]: Kubernetes quantities as compose's cpus and byte sizes;
//! - [`data`]: the entries of a ConfigMap or a Secret, text or bytes.
//!
//! What every provider reads the same way from the module — the image reference, the order of
//! `env` and its `$(NAME)` references, HealthCheck's probes, the mounts of PersistentStorage, a
//! Volumes entry's source, [`sorted_entries`], [`WORKLOAD_TYPE_LABEL`] — and what cannot be
//! honoured (a warning, or with `--strict` an error: `opm_module_common::notes`) are the
//! platform-neutral `opm_module_common`'s.

pub mod data;
pub mod expand;
pub mod extension;
pub mod quantity;

use opm_guest::{Context, Map, Value};
pub use opm_module_common::{WORKLOAD_TYPE_LABEL, mounts_of, object_labels, sorted_entries};

/// The `apiVersion` of every compose resource.
pub const API_VERSION: &str = "compose.opm.dev/v1";

/// A service: an entry of `services:`.
pub const SERVICE: &str = "Service";
/// A named volume: an entry of `volumes:`.
pub const VOLUME: &str = "Volume";
/// One key of a ConfigMap: an entry of `configs:` once a service mounts it.
pub const CONFIG: &str = "Config";
/// One key of a Secret: an entry of `secrets:` once a service mounts it.
pub const SECRET: &str = "Secret";
/// A network: an entry of `networks:`.
pub const NETWORK: &str = "Network";

/// The kinds a compose resource may have, with the top-level section each one fills, in the
/// order the sections are written.
pub const SECTIONS: &[(&str, &str)] = &[
    (SERVICE, "services"),
    (VOLUME, "volumes"),
    (CONFIG, "configs"),
    (SECRET, "secrets"),
    (NETWORK, "networks"),
];

/// A compose resource of `kind` named `name` with the compose body `spec`, labelled with the
/// context's labels ([`object_labels`]).
pub fn resource(kind: &str, name: &str, context: &Context, spec: Value) -> Value {
    opm_module_common::envelope(API_VERSION, kind, name, context, spec)
}

/// The `labels` of a compose entry from the `labels` and `annotations` that a trait or resource
/// gives the objects it renders (a ConfigMap's, a PersistentStorage entry's): compose entries
/// have labels only, and a label's value may be any string, so annotations become labels too;
/// a label wins over an annotation of the same key. In key order, values raw (the renderer
/// escapes them with the rest of the file).
pub fn entry_labels(value: &Value) -> Map<String, Value> {
    let mut labels = std::collections::BTreeMap::new();
    for field in ["annotations", "labels"] {
        for (key, text) in sorted_entries(value.get(field)) {
            if let Some(text) = text.as_str() {
                labels.insert(key.clone(), Value::from(text));
            }
        }
    }
    labels.into_iter().collect()
}

/// The name of the compose entry of one key of the ConfigMap or Secret `object`:
/// `<object>_<key>`. Object names are DNS names, which have no `_`, so the first `_` tells
/// object and key apart ([`split_data_name`]); compose takes `[a-zA-Z0-9._-]` in names, as a
/// key has.
pub fn data_name(object: &str, key: &str) -> String {
    format!("{object}_{key}")
}

/// The object and key of a [`data_name`].
pub fn split_data_name(name: &str) -> Option<(&str, &str)> {
    name.split_once('_')
}

/// A duration in seconds as compose writes one (`10s`).
pub fn seconds(value: u64) -> String {
    format!("{value}s")
}

/// The context of the unit tests: module `shop` at version 1.2.0, its own instance, rendered by
/// `docker-compose`.
#[doc(hidden)]
pub fn test_context() -> Context {
    opm_module_common::test_context("docker-compose")
}

/// [`test_context`] rendering a second instance, `shop-eu`, whose names are prefixed with
/// `shop-eu-`.
#[doc(hidden)]
pub fn test_instance_context() -> Context {
    opm_module_common::test_second_instance(test_context())
}

#[cfg(test)]
mod tests {
    use opm_guest::json;

    use super::*;

    #[test]
    fn a_resource_is_the_envelope_around_a_compose_entry() {
        let service = resource(SERVICE, "api", &test_context(), json!({"image": "nginx"}));
        assert_eq!(
            service,
            json!({"apiVersion": "compose.opm.dev/v1", "kind": "Service",
                   "metadata": {"name": "api", "labels": {
                       "module.opmodel.dev/name": "shop", "module.opmodel.dev/version": "1.2.0",
                       "team": "payments"}},
                   "spec": {"image": "nginx"}})
        );
    }

    #[test]
    fn annotations_become_labels_and_labels_win() {
        let value = json!({"labels": {"tier": "web", "b": "label"},
                           "annotations": {"b": "annotation", "a": "costs $5"}});
        let labels = entry_labels(&value);
        assert_eq!(
            Value::Object(labels.clone()),
            json!({"a": "costs $5", "b": "label", "tier": "web"})
        );
        assert_eq!(labels.keys().collect::<Vec<_>>(), ["a", "b", "tier"]);
        assert!(entry_labels(&json!({"size": "1Gi"})).is_empty());
    }

    #[test]
    fn data_names_split_at_the_first_underscore() {
        let name = data_name("shop-eu-settings", "web_config.yaml");
        assert_eq!(name, "shop-eu-settings_web_config.yaml");
        assert_eq!(
            split_data_name(&name),
            Some(("shop-eu-settings", "web_config.yaml"))
        );
    }
}
