//! ConfigTransformer: renders the ConfigMap resource of a component for the docker-compose
//! provider as one `Config` resource per key, named `<object>_<key>` (the object named after the
//! component, for the instance): its text (`data`, and `binaryData` that decodes to UTF-8) as
//! compose's inline `content`, other bytes as base64 for the renderer to write as a file
//! (`opm_compose_common::data`). The ConfigMap's `labels` and `annotations` become the entries'
//! labels.
//!
//! A ConfigMap is not a compose object: the renderer writes the `configs:` entries that a
//! service mounts (a `configMap` volume), and gives a `configMapKeyRef` its value. `immutable`
//! needs no mapping: a compose config never changes under a running container.

use opm_compose_common::{CONFIG, data};
use opm_guest::{Component, Context, TransformError, Transformer, Value};

/// Renders ConfigMap resources as compose configs.
pub struct ConfigTransformer;

impl Transformer for ConfigTransformer {
    fn transform(component: &Component, context: &Context) -> Result<Vec<Value>, TransformError> {
        data::resources(
            component,
            context,
            CONFIG,
            "configMap",
            ("data", "binaryData"),
        )
    }
}

opm_guest::export!(ConfigTransformer);

#[cfg(test)]
mod tests {
    use super::*;
    use opm_compose_common::{test_context, test_instance_context};
    use opm_guest::json;

    fn component() -> Component {
        Component::from_value(json!({
            "metadata": {"name": "settings"},
            "spec": {"configMap": {
                "data": {"web.yaml": "listen: :8080\n", "flags": "a,b"},
                "binaryData": {"logo.png": "iVBORw0KGgo=", "hello": "aGk="},
                "immutable": true,
                "labels": {"tier": "frontend"},
                "annotations": {"example.com/owner": "team-web"},
            }},
        }))
        .unwrap()
    }

    #[test]
    fn each_key_is_a_config_named_after_the_object_and_the_key() {
        let out = ConfigTransformer::transform(&component(), &test_context()).unwrap();
        let names: Vec<&str> = out
            .iter()
            .map(|r| r["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "settings_flags",
                "settings_hello",
                "settings_logo.png",
                "settings_web.yaml"
            ]
        );
        assert!(out.iter().all(|r| r["kind"] == "Config"));
        let labels = json!({"example.com/owner": "team-web", "tier": "frontend"});
        assert_eq!(
            out[3]["spec"],
            json!({"content": "listen: :8080\n", "labels": labels})
        );
        assert_eq!(out[1]["spec"]["content"], "hi");
        assert_eq!(out[2]["spec"]["x-opm-base64"], "iVBORw0KGgo=");
        assert_eq!(out[0]["metadata"]["labels"]["team"], "payments");
    }

    #[test]
    fn a_second_instance_prefixes_the_object() {
        let out = ConfigTransformer::transform(&component(), &test_instance_context()).unwrap();
        assert_eq!(out[0]["metadata"]["name"], "shop-eu-settings_flags");
    }

    #[test]
    fn an_empty_config_map_renders_nothing_and_bad_data_is_invalid() {
        let empty = Component::from_value(json!({
            "metadata": {"name": "settings"}, "spec": {"configMap": {"data": {}}}}))
        .unwrap();
        assert!(
            ConfigTransformer::transform(&empty, &test_context())
                .unwrap()
                .is_empty()
        );
        let bad = Component::from_value(json!({
            "metadata": {"name": "settings"}, "spec": {"configMap": {"binaryData": {"a": "%"}}}}))
        .unwrap();
        let error = ConfigTransformer::transform(&bad, &test_context()).unwrap_err();
        assert!(
            error.to_string().contains("configMap.binaryData.a"),
            "{error}"
        );
    }
}
