//! Persistent storage (`opm.dev/traits/storage@v1#PersistentStorage`): one claim per entry. A
//! `stateful` component gets them as the StatefulSet's volume claim templates (one claim per
//! replica, named by Kubernetes); every other workload gets a PersistentVolumeClaim named
//! `<component>-<entry>` (or exactly the entry's `claimName`, to adopt an existing install's
//! claim) and a pod volume that refers to it. An entry's `labels` and
//! `annotations` (`helm.sh/resource-policy: keep` is the usual one) go on its claim or claim
//! template.

use opm_guest::{Component, Context, Map, TransformError, Value, json};

use crate::meta::merge_metadata;
use crate::{WORKLOAD_TYPE_LABEL, copy_fields, object_metadata, sorted_entries};

/// The workload type whose storage becomes volume claim templates.
pub const STATEFUL: &str = "stateful";

/// Access mode of a claim that does not name one.
pub const DEFAULT_ACCESS_MODE: &str = "ReadWriteOnce";

/// One entry of the PersistentStorage trait.
#[derive(Debug, Clone, PartialEq)]
pub struct Storage {
    /// The entry's name: the pod volume's name and, for templates, the claim template's.
    pub name: String,
    /// Where the main container mounts it, if anywhere.
    pub mount_path: Option<String>,
    /// The claim's `spec`.
    pub claim_spec: Value,
    /// The entry's own `labels` and `annotations` (see [`crate::meta`]), for the claim or the
    /// claim template; an empty map when it sets neither.
    pub metadata: Value,
    /// The claim's name as the entry pins it (`claimName`), if it does.
    pub claim_name: Option<String>,
}

impl Storage {
    /// The StatefulSet's volume claim template of this entry: its name, the entry's labels and
    /// annotations when it has any, and the claim `spec`.
    pub fn claim_template(&self) -> Result<Value, TransformError> {
        let mut metadata = json!({"name": self.name});
        merge_metadata(
            &mut metadata,
            &self.metadata,
            &format!("persistentStorage.{}", self.name),
        )?;
        Ok(json!({"metadata": metadata, "spec": self.claim_spec}))
    }

    /// The PersistentVolumeClaim of this entry for a component that is not stateful, named
    /// [`claim_name`]: [`object_metadata`] with the entry's labels and annotations merged over.
    pub fn claim(&self, component: &Component, context: &Context) -> Result<Value, TransformError> {
        let name = claim_name(component, context, self);
        let mut metadata = object_metadata(component, context, &name);
        merge_metadata(
            &mut metadata,
            &self.metadata,
            &format!("persistentStorage.{}", self.name),
        )?;
        Ok(json!({
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": metadata,
            "spec": self.claim_spec,
        }))
    }
}

/// Whether `component` is a `stateful` workload, whose storage is volume claim templates.
pub fn is_stateful(component: &Component) -> bool {
    component.label(WORKLOAD_TYPE_LABEL) == Some(STATEFUL)
}

/// The entries of the component's PersistentStorage trait in name order; none without it.
pub fn persistent_storage(component: &Component) -> Result<Vec<Storage>, TransformError> {
    let storage: Option<Value> = component.field("persistentStorage")?;
    sorted_entries(storage.as_ref())
        .into_iter()
        .map(|(name, entry)| {
            let pinned = entry.get("claimName").and_then(Value::as_str);
            if pinned.is_some() && is_stateful(component) {
                return Err(TransformError::invalid(format!(
                    "persistentStorage.{name}.claimName pins a claim's name, but a stateful \
                     component's claims are its StatefulSet's claim templates, which Kubernetes \
                     names ({name}-<statefulset>-<ordinal>); leave claimName out, or make the \
                     component stateless"
                )));
            }
            Ok(Storage {
                claim_name: pinned.map(str::to_owned),
                name: name.clone(),
                mount_path: entry
                    .get("mountPath")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                claim_spec: claim_spec(name, entry)?,
                metadata: entry_metadata(entry),
            })
        })
        .collect()
}

/// Whether a claim of `storage` can be mounted on one node only: its access modes
/// (ReadWriteOnce by default, or ReadWriteOncePod) include neither ReadWriteMany nor
/// ReadOnlyMany. Pods on several nodes, or a new pod started beside the old one on another
/// node, cannot share such a claim.
pub fn mounts_on_one_node(storage: &[Storage]) -> bool {
    storage.iter().any(|entry| {
        let modes = entry.claim_spec["accessModes"].as_array();
        !modes.is_some_and(|modes| {
            modes
                .iter()
                .any(|mode| mode == "ReadWriteMany" || mode == "ReadOnlyMany")
        })
    })
}

/// The name of the PersistentVolumeClaim of `entry` for a component that is not stateful: the
/// one its `claimName` pins, exactly, else `<component>-<entry>` with the instance prefix.
pub fn claim_name(component: &Component, context: &Context, entry: &Storage) -> String {
    match &entry.claim_name {
        Some(pinned) => pinned.clone(),
        None => context.object_name(&format!("{}-{}", component.name(), entry.name)),
    }
}

/// The `labels` and `annotations` of `entry`, those it has.
fn entry_metadata(entry: &Value) -> Value {
    let mut metadata = Map::new();
    copy_fields(entry, &mut metadata, &["labels", "annotations"]);
    Value::Object(metadata)
}

/// A PersistentVolumeClaim `spec`: access modes (default ReadWriteOnce), storage class, size.
fn claim_spec(name: &str, entry: &Value) -> Result<Value, TransformError> {
    let size = entry.get("size").cloned().ok_or_else(|| {
        TransformError::invalid(format!("persistentStorage.{name}.size is required"))
    })?;
    let mut spec = Map::new();
    let modes = entry
        .get("accessModes")
        .cloned()
        .unwrap_or_else(|| json!([DEFAULT_ACCESS_MODE]));
    spec.insert("accessModes".into(), modes);
    if let Some(class) = entry.get("storageClass") {
        spec.insert("storageClassName".into(), class.clone());
    }
    spec.insert("resources".into(), json!({"requests": {"storage": size}}));
    Ok(Value::Object(spec))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_in_name_order_with_defaults() {
        let c = Component::from_value(json!({"metadata": {"name": "db"}, "spec": {"persistentStorage": {
            "wal": {"size": "1Gi", "mountPath": "/wal"},
            "data": {"size": "10Gi", "storageClass": "fast", "accessModes": ["ReadWriteOncePod"]},
        }}}))
        .unwrap();
        let storage = persistent_storage(&c).unwrap();
        assert_eq!(storage.len(), 2);
        assert_eq!(storage[0].name, "data");
        assert_eq!(storage[0].mount_path, None);
        assert_eq!(
            storage[0].claim_spec,
            json!({"accessModes": ["ReadWriteOncePod"], "storageClassName": "fast",
                   "resources": {"requests": {"storage": "10Gi"}}})
        );
        assert_eq!(
            storage[1].claim_spec["accessModes"],
            json!(["ReadWriteOnce"])
        );
        assert_eq!(storage[1].mount_path.as_deref(), Some("/wal"));
        assert_eq!(
            claim_name(&c, &crate::test_context(), &storage[1]),
            "db-wal"
        );
        assert_eq!(
            claim_name(&c, &crate::test_instance_context(), &storage[1]),
            "shop-eu-db-wal"
        );
        assert!(!is_stateful(&c));
        assert!(mounts_on_one_node(&storage));
        assert!(!mounts_on_one_node(&[]));
    }

    /// Real charts (2026-12): the chart's claim `grafana` became `grafana-grafana`, and an
    /// existing install started on an empty volume. `claimName` pins the name, whatever the
    /// instance; a stateful component, whose claims Kubernetes names, is refused it.
    #[test]
    fn a_pinned_claim_name_is_the_claims_name_exactly() {
        let spec =
            json!({"persistentStorage": {"storage": {"size": "10Gi", "claimName": "grafana"}}});
        let c =
            Component::from_value(json!({"metadata": {"name": "grafana"}, "spec": spec})).unwrap();
        let storage = persistent_storage(&c).unwrap();
        for context in [crate::test_context(), crate::test_instance_context()] {
            assert_eq!(claim_name(&c, &context, &storage[0]), "grafana");
            assert_eq!(
                storage[0].claim(&c, &context).unwrap()["metadata"]["name"],
                "grafana"
            );
        }
        let stateful = Component::from_value(json!({
            "metadata": {"name": "db", "labels": {WORKLOAD_TYPE_LABEL: STATEFUL}},
            "spec": spec,
        }))
        .unwrap();
        let error = persistent_storage(&stateful).unwrap_err().to_string();
        assert!(error.contains("claimName pins a claim's name"), "{error}");
    }

    #[test]
    fn a_claim_every_node_can_mount_is_many_or_read_only_many() {
        let c = Component::from_value(
            json!({"metadata": {"name": "db"}, "spec": {"persistentStorage": {
                "shared": {"size": "1Gi", "accessModes": ["ReadWriteOnce", "ReadWriteMany"]},
                "assets": {"size": "1Gi", "accessModes": ["ReadOnlyMany"]},
            }}}),
        )
        .unwrap();
        assert!(!mounts_on_one_node(&persistent_storage(&c).unwrap()));
    }

    #[test]
    fn labels_and_annotations_go_on_the_claim_and_the_claim_template() {
        let c = Component::from_value(
            json!({"metadata": {"name": "db"}, "spec": {"persistentStorage": {
                "data": {"size": "1Gi", "labels": {"backup": "daily"},
                         "annotations": {"helm.sh/resource-policy": "keep"}},
                "tmp": {"size": "1Gi"},
            }}}),
        )
        .unwrap();
        let storage = persistent_storage(&c).unwrap();
        assert_eq!(
            storage[0].claim_template().unwrap(),
            json!({"metadata": {"name": "data", "labels": {"backup": "daily"},
                                "annotations": {"helm.sh/resource-policy": "keep"}},
                   "spec": storage[0].claim_spec})
        );
        assert_eq!(
            storage[1].claim_template().unwrap(),
            json!({"metadata": {"name": "tmp"}, "spec": storage[1].claim_spec})
        );
        let claim = storage[0].claim(&c, &crate::test_context()).unwrap();
        assert_eq!(
            claim["metadata"],
            json!({"name": "db-data",
                   "labels": {"app.kubernetes.io/instance": "shop", "app.kubernetes.io/name": "db",
                              "backup": "daily", "module.opmodel.dev/version": "1.2.0"},
                   "annotations": {"helm.sh/resource-policy": "keep"}})
        );
        let reserved = Component::from_value(
            json!({"metadata": {"name": "db"}, "spec": {"persistentStorage": {
            "data": {"size": "1Gi", "labels": {"app.kubernetes.io/instance": "x"}}}}}),
        )
        .unwrap();
        let err = persistent_storage(&reserved).unwrap()[0]
            .claim_template()
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("persistentStorage.data.labels.app.kubernetes.io/instance"),
            "{err}"
        );
    }

    #[test]
    fn an_entry_without_a_size_is_invalid() {
        let c = Component::from_value(
            json!({"metadata": {"name": "db"}, "spec": {"persistentStorage": {"data": {}}}}),
        )
        .unwrap();
        assert!(persistent_storage(&c).is_err());
    }
}
