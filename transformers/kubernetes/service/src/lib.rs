//! ServiceTransformer: renders the Expose trait of a component into a `v1` Service named after
//! the component that selects its pods. `type: Headless` is a ClusterIP Service without a
//! cluster IP. Ports are `expose.ports`, or else every container port (see
//! `opm_k8s_common::ports`).

use opm_guest::{Component, Context, Map, TransformError, Transformer, Value, json};
use opm_k8s_common::ports::service_ports;
use opm_k8s_common::{object_metadata, selector_labels};

/// Renders exposed components into Services.
pub struct ServiceTransformer;

impl Transformer for ServiceTransformer {
    fn transform(component: &Component, context: &Context) -> Result<Vec<Value>, TransformError> {
        let expose: Value = component.require("expose")?;
        let kind = expose
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("ClusterIP");
        let ports = service_ports(component, Some(&expose))?;
        if ports.is_empty() {
            return Err(TransformError::invalid(format!(
                "component {:?} is exposed but names no ports: set expose.ports or container.ports",
                component.name()
            )));
        }
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
        let node_port = ports.iter().find(|p| p.get("nodePort").is_some());
        if let Some(port) = node_port
            && kind != "NodePort"
            && kind != "LoadBalancer"
        {
            return Err(TransformError::invalid(format!(
                "expose.ports.{}.nodePort needs expose.type NodePort or LoadBalancer",
                port["name"].as_str().unwrap_or_default()
            )));
        }
        spec.insert("selector".into(), selector_labels(component, context));
        spec.insert("ports".into(), Value::Array(ports));
        Ok(vec![json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": object_metadata(component, context, &context.object_name(component.name())),
            "spec": spec,
        })])
    }
}

opm_guest::export!(ServiceTransformer);

#[cfg(test)]
mod tests {
    use super::*;

    fn render(spec: Value) -> Result<Vec<Value>, TransformError> {
        let component = Component::from_value(json!({"metadata": {"name": "api"}, "spec": spec}))?;
        let context = Context {
            name: "shop".into(),
            ..Context::default()
        };
        ServiceTransformer::transform(&component, &context)
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
        assert_eq!(svc["metadata"]["name"], "api");
        assert_eq!(svc["spec"]["type"], "ClusterIP");
        assert_eq!(
            svc["spec"]["ports"],
            json!([{"name": "http", "port": 8080, "targetPort": "http"}])
        );
        assert_eq!(
            svc["spec"]["selector"],
            json!({"app.kubernetes.io/instance": "shop", "app.kubernetes.io/name": "api"})
        );
    }

    #[test]
    fn declared_ports_and_headless() {
        let out = render(json!({
            "container": {"image": "db"},
            "expose": {"type": "Headless", "ports": {"pg": {"port": 5432, "targetPort": 5432, "protocol": "TCP"}}},
        }))
        .unwrap();
        assert_eq!(out[0]["spec"]["type"], "ClusterIP");
        assert_eq!(out[0]["spec"]["clusterIP"], "None");
        assert_eq!(out[0]["spec"]["ports"][0]["protocol"], "TCP");
    }

    #[test]
    fn declared_ports_target_the_container_port_of_their_name() {
        let out = render(json!({
            "container": {"image": "api", "ports": {"http": {"containerPort": 8080}}},
            "expose": {"ports": {"http": {"port": 80}, "grpc": {"port": 9000}}},
        }))
        .unwrap();
        assert_eq!(
            out[0]["spec"]["ports"],
            json!([{"name": "grpc", "port": 9000, "targetPort": 9000},
                   {"name": "http", "port": 80, "targetPort": "http"}])
        );
        let err = render(json!({
            "container": {"image": "api", "ports": {"http": {"containerPort": 8080}}},
            "expose": {"ports": {"web": {"port": 80, "targetPort": "web"}}},
        }))
        .unwrap_err();
        assert!(
            matches!(&err, TransformError::InvalidComponent(m)
                if m.contains("expose.ports.web.targetPort") && m.ends_with("it has http")),
            "{err}"
        );
    }

    #[test]
    fn node_ports_need_a_node_port_service() {
        let expose = |kind: &str| {
            json!({"container": {"image": "x"},
                   "expose": {"type": kind, "ports": {"web": {"port": 80, "nodePort": 30080}}}})
        };
        let out = render(expose("NodePort")).unwrap();
        assert_eq!(out[0]["spec"]["ports"][0]["nodePort"], 30080);
        assert!(render(expose("LoadBalancer")).is_ok());
        let err = render(expose("ClusterIP")).unwrap_err();
        assert!(
            err.to_string().contains("needs expose.type NodePort"),
            "{err}"
        );
    }

    #[test]
    fn no_ports_is_an_invalid_component() {
        let err = render(json!({"container": {"image": "x"}, "expose": {}})).unwrap_err();
        assert!(matches!(err, TransformError::InvalidComponent(m) if m.contains("names no ports")));
    }

    #[test]
    fn an_unknown_type_is_an_invalid_component() {
        let err = render(
            json!({"container": {"image": "x", "ports": {"a": {"containerPort": 1}}},
                                 "expose": {"type": "External"}}),
        )
        .unwrap_err();
        assert!(err.to_string().contains("\"External\""), "{err}");
    }
}
