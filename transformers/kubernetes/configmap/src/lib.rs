//! ConfigMapTransformer: renders the ConfigMap resource of a component into a `v1` ConfigMap
//! named after the component.

use opm_guest::{Component, Context, Map, TransformError, Transformer, Value, json};
use opm_k8s_common::{object_metadata, sorted_entries};

/// Renders config map resources into ConfigMaps.
pub struct ConfigMapTransformer;

impl Transformer for ConfigMapTransformer {
    fn transform(component: &Component, context: &Context) -> Result<Vec<Value>, TransformError> {
        let config: Value = component.require("configMap")?;
        let mut data = Map::new();
        for (key, value) in sorted_entries(config.get("data")) {
            let text = value.as_str().ok_or_else(|| {
                TransformError::invalid(format!("configMap.data.{key} must be a string"))
            })?;
            data.insert(key.clone(), Value::from(text));
        }
        Ok(vec![json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": object_metadata(component, context, &context.object_name(component.name())),
            "data": data,
        })])
    }
}

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
}
