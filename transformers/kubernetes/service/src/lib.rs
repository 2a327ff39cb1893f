//! ServiceTransformer: renders the Expose trait of a component into a `v1` Service that selects
//! the component's pods.

use opm_guest::{Component, Context, Map, TransformError, Transformer, Value, json};
use opm_k8s_common::{object_metadata, selector_labels};

/// Renders exposed components into Services.
pub struct ServiceTransformer;

impl Transformer for ServiceTransformer {
    fn transform(component: &Component, context: &Context) -> Result<Vec<Value>, TransformError> {
        let expose: Value = component.require("expose")?;
        let container: Option<Value> = component.field("container")?;
        let kind = expose.get("type").and_then(Value::as_str).unwrap_or("ClusterIP");
        let ports = service_ports(component, &expose, container.as_ref())?;
        let mut spec = Map::new();
        match kind {
            "Headless" => {
                spec.insert("type".into(), json!("ClusterIP"));
                spec.insert("clusterIP".into(), json!("None"));
            }
            "ClusterIP" | "NodePort" | "LoadBalancer" => {
                spec.insert("type".into(), json!(kind));
            }
            other => {
                return Err(TransformError::invalid(format!(
                    "expose.type {other:?} is not one of ClusterIP, NodePort, LoadBalancer, Headless"
                )));
            }
        }
        spec.insert("selector".into(), selector_labels(component));
        spec.insert("ports".into(), Value::Array(ports));
        Ok(vec![json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": object_metadata(component, context, component.name()),
            "spec": spec,
        })])
    }
}

/// The Service's ports: `expose.ports` when given, else every container port, in name order.
fn service_ports(
    component: &Component,
    expose: &Value,
    container: Option<&Value>,
) -> Result<Vec<Value>, TransformError> {
    let mut ports = Vec::new();
    if let Some(declared) = expose.get("ports").and_then(Value::as_object) {
        let mut declared: Vec<_> = declared.iter().collect();
        declared.sort_by(|a, b| a.0.cmp(b.0));
        for (name, port) in declared {
            let number = port.get("port").cloned().ok_or_else(|| {
                TransformError::invalid(format!("expose.ports.{name}.port is required"))
            })?;
            let target = port.get("targetPort").cloned().unwrap_or_else(|| number.clone());
            ports.push(port_entry(name, number, target, port.get("protocol")));
        }
    } else if let Some(declared) = container.and_then(|c| c.get("ports")).and_then(Value::as_object) {
        let mut declared: Vec<_> = declared.iter().collect();
        declared.sort_by(|a, b| a.0.cmp(b.0));
        for (name, port) in declared {
            let number = port.get("containerPort").cloned().unwrap_or(Value::Null);
            ports.push(port_entry(name, number, json!(name), port.get("protocol")));
        }
    }
    if ports.is_empty() {
        return Err(TransformError::invalid(format!(
            "component {:?} is exposed but names no ports: set expose.ports or container.ports",
            component.name()
        )));
    }
    Ok(ports)
}

fn port_entry(name: &str, port: Value, target: Value, protocol: Option<&Value>) -> Value {
    let mut entry = json!({"name": name, "port": port, "targetPort": target});
    if let Some(protocol) = protocol {
        entry["protocol"] = protocol.clone();
    }
    entry
}

opm_guest::export!(ServiceTransformer);

#[cfg(test)]
mod tests {
    use super::*;

    fn render(spec: Value) -> Result<Vec<Value>, TransformError> {
        let component = Component::from_value(json!({"metadata": {"name": "api"}, "spec": spec}))?;
        ServiceTransformer::transform(&component, &Context::default())
    }

    #[test]
    fn ports_default_to_the_container_ports() {
        let out = render(json!({
            "container": {"image": "api", "ports": {"http": {"containerPort": 8080}}},
            "expose": {"type": "ClusterIP"},
        }))
        .unwrap();
        let svc = &out[0];
        assert_eq!(svc["kind"], "Service");
        assert_eq!(svc["spec"]["type"], "ClusterIP");
        assert_eq!(svc["spec"]["ports"], json!([{"name": "http", "port": 8080, "targetPort": "http"}]));
        assert_eq!(svc["spec"]["selector"]["app.kubernetes.io/name"], "api");
    }

    #[test]
    fn declared_ports_and_headless() {
        let out = render(json!({
            "container": {"image": "db"},
            "expose": {"type": "Headless", "ports": {"pg": {"port": 5432, "targetPort": 5432, "protocol": "TCP"}}},
        }))
        .unwrap();
        assert_eq!(out[0]["spec"]["clusterIP"], "None");
        assert_eq!(out[0]["spec"]["ports"][0]["protocol"], "TCP");
    }

    #[test]
    fn no_ports_is_an_invalid_component() {
        let err = render(json!({"container": {"image": "x"}, "expose": {}})).unwrap_err();
        assert!(matches!(err, TransformError::InvalidComponent(m) if m.contains("names no ports")));
    }
}
