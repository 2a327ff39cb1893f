//! What every provider's transformers read the same way from a module, whatever platform they
//! render for: the definitions of the shared catalog (`providers/catalog/definitions.yaml`) —
//! Container, its `env`, HealthCheck, PersistentStorage, Volumes — as the module writes them.
//! A provider's own crate (`opm-k8s-common`, `opm-compose-common`) turns what this reads into
//! its platform's objects.
//!
//! - [`container`]: the image reference, the HealthCheck's probes and the PersistentStorage
//!   mounts of the main container, a `restartPolicy` only an init container may have;
//! - [`env`]: the order a container's variables are defined in, and the `$(NAME)` references of
//!   a value;
//! - [`host`]: what counts as host access, and the label by which a component asks for it;
//! - [`notes`]: what a platform cannot honour, as a warning or (with `--strict`) an error;
//! - [`probe`]: a probe as a shell command run inside the container (an `httpGet` probe's
//!   `wget`, else `curl`), for the platforms whose health checks run there;
//! - [`volumes`]: the one source of a Volumes entry, and the PersistentStorage entries;
//! - [`workload`]: how a workload's containers restart (RestartPolicy, a job's `backoffLimit`);
//! - [`sorted_entries`]: a map of the module walked in key order; [`mounts_of`]: a volume's one
//!   mount or several;
//! - [`envelope`], [`object_labels`]: a resource as opm's envelope around one object of the
//!   platform (`apiVersion`, `kind`, `metadata`, `spec`), the providers' whose resources are
//!   not Kubernetes objects (docker-compose, quadlet).
//!
//! The module keeps collections that users override one entry at a time (ports, env, mounts,
//! volumes) as maps keyed by name; maps are walked in key order, so output is deterministic
//! whatever order the module wrote them in.

pub mod container;
pub mod env;
pub mod host;
pub mod notes;
pub mod probe;
pub mod volumes;
pub mod workload;

use opm_guest::{Context, Map, Value, json};

/// The label whose value selects the workload transformer of a component.
pub const WORKLOAD_TYPE_LABEL: &str = "core.opm.dev/workload-type";

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

/// The mounts of one volume in a container's `volumeMounts`: the one mount written as a map, or
/// each of a list of them, in the order written (one claim mounted at several paths, each with
/// its own `subPath`).
pub fn mounts_of(mounts: &Value) -> Vec<&Value> {
    match mounts {
        Value::Array(items) => items.iter().collect(),
        other => vec![other],
    }
}

/// A resource of `kind` named `name` with the platform's object `spec`, in the envelope of the
/// provider's `api_version`, labelled with the context's labels ([`object_labels`]).
///
/// ```
/// use opm_guest::{Context, json};
/// let unit = opm_module_common::envelope("quadlet.opm.dev/v1", "Container", "api",
///     &Context::default(), json!({"Container": {"Image": "nginx"}}));
/// assert_eq!(unit, json!({"apiVersion": "quadlet.opm.dev/v1", "kind": "Container",
///     "metadata": {"name": "api", "labels": {}}, "spec": {"Container": {"Image": "nginx"}}}));
/// ```
pub fn envelope(
    api_version: &str,
    kind: &str,
    name: &str,
    context: &Context,
    spec: Value,
) -> Value {
    json!({
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "labels": object_labels(context)},
        "spec": spec,
    })
}

/// The labels of every resource: the module's labels and opm's tracking labels, in key order.
pub fn object_labels(context: &Context) -> Map<String, Value> {
    context
        .labels
        .iter()
        .map(|(key, value)| (key.clone(), Value::from(value.as_str())))
        .collect()
}

/// The context of a provider's unit tests: module `shop` at version 1.2.0, its own instance in
/// the namespace `shop`, rendered by `provider`, with the module's labels and one of its own
/// (`team: payments`).
#[doc(hidden)]
pub fn test_context(provider: &str) -> Context {
    Context {
        name: "shop".into(),
        module: "shop".into(),
        namespace: "shop".into(),
        version: "1.2.0".into(),
        provider: provider.into(),
        labels: [
            ("module.opmodel.dev/name".to_owned(), "shop".to_owned()),
            ("module.opmodel.dev/version".to_owned(), "1.2.0".to_owned()),
            ("team".to_owned(), "payments".to_owned()),
        ]
        .into(),
        ..Context::default()
    }
}

/// `context` rendering a second instance, `shop-eu`, whose objects' names the transformers
/// prefix with `shop-eu-`: each provider's `test_instance_context` of its own `test_context`.
#[doc(hidden)]
pub fn test_second_instance(mut context: Context) -> Context {
    context.name = "shop-eu".into();
    context
        .labels
        .insert(opm_guest::INSTANCE_LABEL.to_owned(), "shop-eu".to_owned());
    context
}

#[cfg(test)]
mod tests {
    use opm_guest::json;

    use super::*;

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

    #[test]
    fn a_second_instance_is_named_and_labelled_shop_eu() {
        let context = test_second_instance(Context::default());
        assert_eq!(context.object_name("api"), "shop-eu-api");
        assert_eq!(context.labels[opm_guest::INSTANCE_LABEL], "shop-eu");
    }
}
