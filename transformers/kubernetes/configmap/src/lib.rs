//! ConfigMapTransformer: renders the ConfigMap resource of a component into a `v1` ConfigMap
//! named after the component: `data` (text) and `binaryData` (base64), each in key order and
//! never sharing a key, `immutable` when set, and the resource's `labels` and `annotations`
//! merged over the component's.

use opm_guest::{Component, Context, Map, TransformError, Transformer, Value, json};
use opm_k8s_common::data::{base64_map, disjoint, text_map};
use opm_k8s_common::meta::merge_metadata;
use opm_k8s_common::object_metadata;

/// Renders config map resources into ConfigMaps.
pub struct ConfigMapTransformer;

impl Transformer for ConfigMapTransformer {
    fn transform(component: &Component, context: &Context) -> Result<Vec<Value>, TransformError> {
        let config: Value = component.require("configMap")?;
        let data = text_map(config.get("data"), "configMap.data")?;
        let binary = base64_map(config.get("binaryData"), "configMap.binaryData")?;
        disjoint((&data, "configMap.data"), (&binary, "configMap.binaryData"))?;
        let mut metadata = object_metadata(
            component,
            context,
            &opm_k8s_common::pinned_name(component, context, &config),
        );
        merge_metadata(&mut metadata, &config, "configMap")?;
        let mut object = Map::new();
        object.insert("apiVersion".into(), json!("v1"));
        object.insert("kind".into(), json!("ConfigMap"));
        object.insert("metadata".into(), metadata);
        object.insert("data".into(), Value::Object(data));
        if !binary.is_empty() {
            object.insert("binaryData".into(), Value::Object(binary));
        }
        if let Some(immutable) = config.get("immutable").filter(|v| v.is_boolean()) {
            object.insert("immutable".into(), immutable.clone());
        }
        Ok(vec![Value::Object(object)])
    }
}

#[cfg(not(feature = "library"))]
opm_guest::export!(ConfigMapTransformer);

#[cfg(test)]
mod tests {
    use super::*;

    fn render(config: Value) -> Result<Vec<Value>, TransformError> {
        let component = Component::from_value(
            json!({"metadata": {"name": "settings"}, "spec": {"configMap": config}}),
        )?;
        ConfigMapTransformer::transform(&component, &Context::default())
    }

    #[test]
    fn minimal_config_map_is_empty() {
        let out = render(json!({})).unwrap();
        assert_eq!(out[0]["kind"], "ConfigMap");
        assert_eq!(out[0]["metadata"]["name"], "settings");
        assert_eq!(out[0]["data"], json!({}));
        assert!(out[0].get("binaryData").is_none() && out[0].get("immutable").is_none());
    }

    /// Real charts (2026-12): a name a migration can keep — `name` pins it, without the
    /// instance prefix.
    #[test]
    fn a_pinned_name_is_the_objects_name_exactly() {
        let out = render(json!({"name": "grafana-config", "data": {"a": "b"}})).unwrap();
        assert_eq!(out[0]["metadata"]["name"], "grafana-config");
        assert!(out[0].get("name").is_none() && out[0]["data"].get("name").is_none());
    }

    #[test]
    fn data_keys_in_order() {
        let out = render(json!({"data": {"b.conf": "x", "a.conf": "y\nz"}})).unwrap();
        let keys: Vec<&String> = out[0]["data"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["a.conf", "b.conf"]);
        assert_eq!(out[0]["data"]["a.conf"], "y\nz");
    }

    #[test]
    fn a_non_string_value_is_invalid() {
        assert!(render(json!({"data": {"n": 1}})).is_err());
    }

    #[test]
    fn maximal_config_map_has_binary_data_immutable_labels_and_annotations() {
        let out = render(json!({
            "data": {"app.conf": "x"},
            "binaryData": {"logo.png": "iVBORw0KGgo=", "a.bin": "AAE="},
            "immutable": true,
            "labels": {"tier": "web"},
            "annotations": {"example.com/owner": "team-a"},
        }))
        .unwrap();
        assert_eq!(
            out[0],
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "settings",
                                "labels": {"app.kubernetes.io/instance": "",
                                           "app.kubernetes.io/name": "settings", "tier": "web"},
                                "annotations": {"example.com/owner": "team-a"}},
                   "data": {"app.conf": "x"},
                   "binaryData": {"a.bin": "AAE=", "logo.png": "iVBORw0KGgo="},
                   "immutable": true})
        );
        let keys: Vec<&String> = out[0].as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "apiVersion",
                "kind",
                "metadata",
                "data",
                "binaryData",
                "immutable"
            ]
        );
    }

    #[test]
    fn binary_data_must_be_base64_and_may_not_repeat_a_data_key() {
        let err = render(json!({"binaryData": {"logo.png": "not base64!"}})).unwrap_err();
        assert!(
            err.to_string()
                .contains("configMap.binaryData.logo.png must be base64"),
            "{err}"
        );
        let err = render(json!({"data": {"a": "x"}, "binaryData": {"a": "eA=="}})).unwrap_err();
        assert!(
            err.to_string()
                .contains("key \"a\" is in both configMap.data and configMap.binaryData"),
            "{err}"
        );
    }
}
