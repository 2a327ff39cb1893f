//! {{name}}: an opm transformer. It renders a component's `configMap.data` into a ConfigMap
//! named after the component. `render` is the transform itself, plain Rust that `cargo test`
//! runs natively; the `guest` module connects it to the WIT contract.

use serde_json::{Value, json};

/// The render context a transform needs: the module name, namespace and labels.
pub struct Render<'a> {
    pub module: &'a str,
    pub namespace: &'a str,
    pub labels: &'a [(String, String)],
}

/// Renders `component` (the JSON the host passes) into resources, or says why it cannot.
pub fn render(component: &Value, context: &Render<'_>) -> Result<Vec<Value>, String> {
    let name = component["metadata"]["name"]
        .as_str()
        .ok_or("the component has no metadata.name")?;
    let data = component["spec"]["configMap"]["data"]
        .as_object()
        .ok_or_else(|| format!("component {name:?} has no configMap.data map"))?;
    let mut labels = serde_json::Map::new();
    for (key, value) in context.labels {
        labels.insert(key.clone(), json!(value));
    }
    labels.insert("app.kubernetes.io/name".into(), json!(name));
    Ok(vec![json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": context.namespace, "labels": labels},
        "data": data,
    })])
}

/// The component's side: bindings of wit/transformer.wit and the `Guest` implementation. Only
/// a wasm32 build has the host's imports to link against, so native `cargo test` leaves it out.
#[cfg(target_arch = "wasm32")]
mod guest {
    use serde_json::Value;

    wit_bindgen::generate!({ path: "wit", world: "transformer-world" });

    use exports::opm::transformer::transformer::Guest;
    use opm::transformer::log::{Level, log};
    use opm::transformer::types::{Context, TransformError};

    struct Component;

    impl Guest for Component {
        fn transform(component: String, context: Context) -> Result<Vec<String>, TransformError> {
            let component: Value = serde_json::from_str(&component).map_err(|e| {
                TransformError::InvalidComponent(format!("malformed component: {e}"))
            })?;
            let render_context = super::Render {
                module: &context.name,
                namespace: &context.namespace,
                labels: &context.labels,
            };
            let resources = super::render(&component, &render_context)
                .map_err(TransformError::InvalidComponent)?;
            log(
                Level::Info,
                &format!("rendered {} resource(s) for module {}", resources.len(), context.name),
            );
            Ok(resources.iter().map(Value::to_string).collect())
        }
    }

    export!(Component);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_the_data_into_a_config_map() {
        let component = json!({"metadata": {"name": "settings"},
                               "spec": {"configMap": {"data": {"mode": "fast"}}}});
        let labels = [("team".to_owned(), "web".to_owned())];
        let context = Render { module: "shop", namespace: "prod", labels: &labels };
        let out = render(&component, &context).unwrap();
        assert_eq!(out[0]["kind"], "ConfigMap");
        assert_eq!(out[0]["metadata"]["namespace"], "prod");
        assert_eq!(out[0]["metadata"]["labels"]["team"], "web");
        assert_eq!(out[0]["data"]["mode"], "fast");
    }

    #[test]
    fn a_component_without_data_is_invalid() {
        let component = json!({"metadata": {"name": "settings"}, "spec": {}});
        let context = Render { module: "shop", namespace: "prod", labels: &[] };
        assert_eq!(
            render(&component, &context).unwrap_err(),
            "component \"settings\" has no configMap.data map"
        );
    }
}
