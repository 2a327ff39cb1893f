//! IngressTransformer: renders the Ingress trait into a `networking.k8s.io/v1` Ingress that
//! routes `host` + `path` (a Prefix, default `/`) to the component's Service.
//!
//! The Service is the one the Expose trait renders, so the component must have Expose; `port`
//! names one of its ports, and may be left out when it has exactly one. `tls.secretName` turns
//! on TLS for `host`.

use opm_guest::{Component, Context, Map, TransformError, Transformer, Value, json};
use opm_k8s_common::object_metadata;
use opm_k8s_common::ports::{backend_port, service_ports};

/// Renders the Ingress trait into Ingresses.
pub struct IngressTransformer;

/// Path of a route that names none.
pub const DEFAULT_PATH: &str = "/";

impl Transformer for IngressTransformer {
    fn transform(component: &Component, context: &Context) -> Result<Vec<Value>, TransformError> {
        let ingress: Value = component.require("ingress")?;
        let expose: Value = component.field("expose")?.ok_or_else(|| {
            TransformError::invalid(format!(
                "component {:?} has an Ingress but no Expose trait: the Ingress routes to the \
                 Service that Expose renders",
                component.name()
            ))
        })?;
        let ports = service_ports(component, Some(&expose))?;
        let port = backend_port(
            &ports,
            ingress.get("port").and_then(Value::as_str),
            "ingress.port",
        )?["name"]
            .clone();
        let host = ingress.get("host").and_then(Value::as_str);
        let path = ingress
            .get("path")
            .and_then(Value::as_str)
            .unwrap_or(DEFAULT_PATH);
        let mut rule = Map::new();
        if let Some(host) = host {
            rule.insert("host".into(), Value::from(host));
        }
        rule.insert(
            "http".into(),
            json!({"paths": [{
                "path": path,
                "pathType": "Prefix",
                "backend": {"service": {"name": context.object_name(component.name()), "port": {"name": port}}},
            }]}),
        );
        let mut spec = Map::new();
        if let Some(class) = ingress.get("className") {
            spec.insert("ingressClassName".into(), class.clone());
        }
        if let Some(secret) = ingress.get("tls").and_then(|tls| tls.get("secretName")) {
            let mut tls = Map::new();
            if let Some(host) = host {
                tls.insert("hosts".into(), json!([host]));
            }
            tls.insert("secretName".into(), secret.clone());
            spec.insert("tls".into(), json!([tls]));
        }
        spec.insert("rules".into(), json!([rule]));
        Ok(vec![json!({
            "apiVersion": "networking.k8s.io/v1",
            "kind": "Ingress",
            "metadata": object_metadata(component, context, &context.object_name(component.name())),
            "spec": spec,
        })])
    }
}

opm_guest::export!(IngressTransformer);

#[cfg(test)]
mod tests {
    use super::*;

    fn render(spec: Value) -> Result<Vec<Value>, TransformError> {
        let component = Component::from_value(json!({"metadata": {"name": "web"}, "spec": spec}))?;
        IngressTransformer::transform(&component, &Context::default())
    }

    fn web(ingress: Value) -> Value {
        json!({
            "container": {"image": "web", "ports": {"http": {"containerPort": 8080},
                                                    "metrics": {"containerPort": 9090}}},
            "expose": {"type": "ClusterIP"},
            "ingress": ingress,
        })
    }

    #[test]
    fn minimal_ingress_routes_slash_to_the_only_port() {
        let out = render(json!({
            "container": {"image": "web", "ports": {"http": {"containerPort": 8080}}},
            "expose": {"type": "ClusterIP"},
            "ingress": {"path": "/"},
        }))
        .unwrap();
        assert_eq!(
            out[0]["spec"],
            json!({"rules": [{"http": {"paths": [{"path": "/", "pathType": "Prefix",
                   "backend": {"service": {"name": "web", "port": {"name": "http"}}}}]}}]})
        );
    }

    #[test]
    fn a_route_without_a_path_is_a_prefix_route_on_slash() {
        let out = render(web(json!({"host": "shop.example.com", "port": "http"}))).unwrap();
        assert_eq!(DEFAULT_PATH, "/");
        assert_eq!(
            out[0]["spec"]["rules"][0],
            json!({"host": "shop.example.com", "http": {"paths": [{"path": "/", "pathType": "Prefix",
                   "backend": {"service": {"name": "web", "port": {"name": "http"}}}}]}})
        );
    }

    #[test]
    fn maximal_ingress_has_class_host_path_port_and_tls() {
        let out = render(web(
            json!({"host": "shop.example.com", "path": "/api", "port": "http",
                                     "className": "nginx", "tls": {"secretName": "shop-tls"}}),
        ))
        .unwrap();
        let spec = &out[0]["spec"];
        assert_eq!(spec["ingressClassName"], "nginx");
        assert_eq!(
            spec["tls"],
            json!([{"hosts": ["shop.example.com"], "secretName": "shop-tls"}])
        );
        assert_eq!(spec["rules"][0]["host"], "shop.example.com");
        assert_eq!(spec["rules"][0]["http"]["paths"][0]["path"], "/api");
    }

    #[test]
    fn the_port_must_be_named_when_there_are_several_and_must_exist() {
        let err = render(web(json!({}))).unwrap_err();
        assert!(
            err.to_string().contains("several ports (http, metrics)"),
            "{err}"
        );
        let err = render(web(json!({"port": "grpc"}))).unwrap_err();
        assert!(err.to_string().contains("\"grpc\" is not a port"), "{err}");
    }

    #[test]
    fn an_ingress_without_expose_is_invalid() {
        let err = render(json!({"container": {"image": "web"}, "ingress": {}})).unwrap_err();
        assert!(err.to_string().contains("no Expose trait"), "{err}");
    }

    #[test]
    fn a_second_instance_names_its_ingress_and_routes_to_its_own_service() {
        let component = Component::from_value(json!({"metadata": {"name": "web"},
                                                     "spec": web(json!({"port": "http"}))}))
        .unwrap();
        let context = opm_k8s_common::test_instance_context();
        let out = IngressTransformer::transform(&component, &context).unwrap();
        assert_eq!(out[0]["metadata"]["name"], "shop-eu-web");
        assert_eq!(
            out[0]["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]["name"],
            "shop-eu-web"
        );
    }
}
