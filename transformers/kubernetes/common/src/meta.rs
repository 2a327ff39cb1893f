//! Labels and annotations that a trait or resource adds to the objects it renders: the
//! `labels` and `annotations` fields of Expose, Ingress, HttpRoute, ConfigMap, Secret and each
//! PersistentStorage entry, one shape everywhere.
//!
//! They are merged over the object's own metadata ([`crate::object_metadata`]: the module's and
//! the component's labels, the component's annotations), and win over them, but never over
//! opm's own labels ([`RESERVED_LABELS`]), which selectors and tracking rely on. The schemas
//! refuse those keys; [`merge_metadata`] refuses them too, so that a provider without the
//! schema cannot break a selector either. Keys come out in key order, whatever order they were
//! written in.
//!
//! ```
//! use opm_guest::json;
//! use opm_k8s_common::meta::merge_metadata;
//! let mut metadata = json!({"name": "api", "labels": {"team": "a"}});
//! let service = json!({"labels": {"tier": "web"}, "annotations": {"example.com/owner": "a"}});
//! merge_metadata(&mut metadata, &service, "expose").unwrap();
//! assert_eq!(metadata, json!({"name": "api", "labels": {"team": "a", "tier": "web"},
//!                             "annotations": {"example.com/owner": "a"}}));
//! ```

use opm_guest::{Map, TransformError, Value};

/// The labels opm sets and relies on (selectors, instances, tracking), which no `labels` field
/// may set.
pub const RESERVED_LABELS: &[&str] = &[
    "app.kubernetes.io/instance",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/name",
    "component.opmodel.dev/name",
    "module.opmodel.dev/name",
    "module.opmodel.dev/version",
];

/// Merges the `labels` and `annotations` of `value` (a trait's or resource's value, or one
/// entry of it) over those of `metadata`, in key order. `field` names `value` in errors
/// (`expose`, `persistentStorage.data`). An empty or missing map changes nothing, so an object
/// whose trait sets neither renders as it did before these fields existed.
pub fn merge_metadata(
    metadata: &mut Value,
    value: &Value,
    field: &str,
) -> Result<(), TransformError> {
    let Some(metadata) = metadata.as_object_mut() else {
        return Ok(());
    };
    for key in ["labels", "annotations"] {
        let Some(added) = value
            .get(key)
            .and_then(Value::as_object)
            .filter(|added| !added.is_empty())
        else {
            continue;
        };
        if key == "labels"
            && let Some(reserved) = added
                .keys()
                .find(|label| RESERVED_LABELS.contains(&label.as_str()))
        {
            return Err(TransformError::invalid(format!(
                "{field}.labels.{reserved} is one of opm's own labels, which cannot be set"
            )));
        }
        let mut merged: Map<String, Value> = metadata
            .get(key)
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        for (name, text) in added {
            let Value::String(_) = text else {
                return Err(TransformError::invalid(format!(
                    "{field}.{key}.{name} must be a string"
                )));
            };
            merged.insert(name.clone(), text.clone());
        }
        merged.sort_keys();
        metadata.insert(key.into(), Value::Object(merged));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use opm_guest::json;

    #[test]
    fn labels_and_annotations_merge_over_the_objects_own_in_key_order() {
        let mut metadata = json!({"name": "api", "labels": {"team": "a", "b": "1"},
                                  "annotations": {"z": "own"}});
        let value = json!({"labels": {"team": "b", "a": "2"},
                           "annotations": {"a": "added", "z": "trait"}});
        merge_metadata(&mut metadata, &value, "expose").unwrap();
        assert_eq!(
            metadata,
            json!({"name": "api", "labels": {"a": "2", "b": "1", "team": "b"},
                   "annotations": {"a": "added", "z": "trait"}})
        );
        let keys: Vec<&String> = metadata["labels"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["a", "b", "team"]);
    }

    #[test]
    fn nothing_to_merge_leaves_the_metadata_as_it_was() {
        let before = json!({"name": "api", "labels": {"team": "a"}});
        let mut metadata = before.clone();
        merge_metadata(&mut metadata, &json!({"labels": {}, "port": 1}), "expose").unwrap();
        assert_eq!(metadata, before);
        assert!(RESERVED_LABELS.is_sorted());
    }

    #[test]
    fn opms_own_labels_cannot_be_set() {
        let mut metadata = json!({"name": "api", "labels": {}});
        let value = json!({"labels": {"app.kubernetes.io/name": "other"}});
        let err = merge_metadata(&mut metadata, &value, "ingress").unwrap_err();
        assert_eq!(
            err.to_string(),
            TransformError::invalid(
                "ingress.labels.app.kubernetes.io/name is one of opm's own labels, which cannot \
                 be set"
            )
            .to_string()
        );
    }
}
