//! HttpRouteTransformer: renders the HttpRoute trait into a Gateway API
//! `gateway.networking.k8s.io/v1` HTTPRoute that attaches to the named Gateways and sends
//! matching requests to the component's Service (the one Expose renders), beside or instead of
//! an Ingress.
//!
//! - `gateways` (by name, each with an optional `namespace` and `sectionName`) become
//!   `parentRefs`, in name order;
//! - `hostnames` are copied;
//! - `rules` (by name, rendered in name order with that `name`) each match paths (PathPrefix by
//!   default), methods or headers and send to one port of the Service, named by its port name
//!   (`port`, which may be left out when the Service has one port) and rendered as the port
//!   number the Gateway API wants. Without `rules`, everything goes to the Service's only port;
//! - `labels` and `annotations` are merged over the component's on the HTTPRoute.

use opm_guest::{Component, Context, Map, TransformError, Transformer, Value, json};
use opm_k8s_common::gateway::{backend_refs, route_object};
use opm_k8s_common::ports::{required_expose, service_ports};
use opm_k8s_common::sorted_entries;

/// Renders the HttpRoute trait into HTTPRoutes.
pub struct HttpRouteTransformer;

impl Transformer for HttpRouteTransformer {
    fn transform(component: &Component, context: &Context) -> Result<Vec<Value>, TransformError> {
        let route: Value = component.require("httpRoute")?;
        let expose = required_expose(component, "an HttpRoute", "the route sends traffic to")?;
        let ports = service_ports(component, Some(&expose))?;

        let backend = |wanted: Option<&str>, field: &str| {
            backend_refs(component, context, &ports, wanted, field)
        };
        let rules = match route.get("rules").and_then(Value::as_object) {
            Some(rules) if !rules.is_empty() => sorted_entries(route.get("rules"))
                .into_iter()
                .map(|(name, rule)| {
                    let field = format!("httpRoute.rules.{name}.port");
                    let mut out = Map::new();
                    out.insert("name".into(), Value::from(name.as_str()));
                    if let Some(matches) = rule.get("matches").and_then(Value::as_array) {
                        let matches: Vec<Value> = matches.iter().map(route_match).collect();
                        out.insert("matches".into(), Value::Array(matches));
                    }
                    out.insert(
                        "backendRefs".into(),
                        backend(rule.get("port").and_then(Value::as_str), &field)?,
                    );
                    if let Some(timeouts) = rule.get("timeouts") {
                        out.insert("timeouts".into(), timeouts.clone());
                    }
                    Ok(Value::Object(out))
                })
                .collect::<Result<Vec<_>, TransformError>>()?,
            _ => vec![json!({"backendRefs": backend(None, "httpRoute.rules")?})],
        };

        Ok(vec![route_object(
            component,
            context,
            &route,
            "httpRoute",
            "HTTPRoute",
            rules,
        )?])
    }
}

/// One match of a rule: a path (PathPrefix unless it says Exact), a method, headers (exact
/// values), as the Gateway API spells them.
fn route_match(written: &Value) -> Value {
    let mut out = Map::new();
    if let Some(path) = written.get("path") {
        let kind = path
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("PathPrefix");
        out.insert(
            "path".into(),
            json!({"type": kind, "value": path.get("value").cloned().unwrap_or(json!("/"))}),
        );
    }
    if let Some(headers) = written.get("headers").and_then(Value::as_object) {
        let mut names: Vec<&String> = headers.keys().collect();
        names.sort();
        let headers: Vec<Value> = names
            .into_iter()
            .map(|name| json!({"type": "Exact", "name": name, "value": headers[name]}))
            .collect();
        out.insert("headers".into(), Value::Array(headers));
    }
    if let Some(method) = written.get("method") {
        out.insert("method".into(), method.clone());
    }
    Value::Object(out)
}

#[cfg(not(feature = "library"))]
opm_guest::export!(HttpRouteTransformer);

#[cfg(test)]
mod tests {
    use super::*;

    fn render(route: Value, ports: Value) -> Result<Vec<Value>, TransformError> {
        let component = Component::from_value(json!({
            "metadata": {"name": "shop"},
            "spec": {"container": {"image": "shop", "ports": ports},
                     "expose": {"type": "ClusterIP"}, "httpRoute": route},
        }))?;
        HttpRouteTransformer::transform(&component, &Context::default())
    }

    #[test]
    fn a_minimal_route_sends_everything_to_the_only_port() {
        let out = render(
            json!({"gateways": {"public": {}}}),
            json!({"http": {"containerPort": 8080}}),
        )
        .unwrap();
        assert_eq!(out[0]["kind"], "HTTPRoute");
        assert_eq!(
            out[0]["spec"],
            json!({"parentRefs": [{"name": "public"}],
                   "rules": [{"backendRefs": [{"name": "shop", "port": 8080}]}]})
        );
    }

    #[test]
    fn rules_by_name_match_paths_methods_and_headers_and_name_ports() {
        let out = render(
            json!({
                "gateways": {"public": {"namespace": "gateways", "sectionName": "https"},
                             "internal": {}},
                "hostnames": ["shop.example.com"],
                "rules": {
                    "web": {"matches": [{"path": {"value": "/"}}], "port": "web"},
                    "api": {"matches": [{"path": {"type": "Exact", "value": "/api/v1"},
                                         "method": "POST",
                                         "headers": {"x-tenant": "a"}}],
                            "port": "api", "timeouts": {"request": "10s"}},
                },
            }),
            json!({"web": {"containerPort": 8080}, "api": {"containerPort": 9000}}),
        )
        .unwrap();
        let spec = &out[0]["spec"];
        assert_eq!(
            spec["parentRefs"],
            json!([{"name": "internal"},
                   {"name": "public", "namespace": "gateways", "sectionName": "https"}])
        );
        assert_eq!(spec["hostnames"], json!(["shop.example.com"]));
        assert_eq!(
            spec["rules"][0],
            json!({"name": "api",
                   "matches": [{"path": {"type": "Exact", "value": "/api/v1"},
                                "headers": [{"type": "Exact", "name": "x-tenant", "value": "a"}],
                                "method": "POST"}],
                   "backendRefs": [{"name": "shop", "port": 9000}],
                   "timeouts": {"request": "10s"}})
        );
        assert_eq!(spec["rules"][1]["matches"][0]["path"]["type"], "PathPrefix");
    }

    #[test]
    fn labels_and_annotations_go_on_the_route() {
        let out = render(
            json!({"gateways": {"public": {}}, "labels": {"gateway": "public"},
                   "annotations": {"example.com/team": "shop"}}),
            json!({"http": {"containerPort": 8080}}),
        )
        .unwrap();
        assert_eq!(
            out[0]["metadata"],
            json!({"name": "shop",
                   "labels": {"app.kubernetes.io/instance": "", "app.kubernetes.io/name": "shop",
                              "gateway": "public"},
                   "annotations": {"example.com/team": "shop"}})
        );
    }

    #[test]
    fn a_port_that_is_not_the_services_or_a_missing_one_is_invalid() {
        let ports = json!({"web": {"containerPort": 8080}, "api": {"containerPort": 9000}});
        let named = render(
            json!({"gateways": {"g": {}}, "rules": {"r": {"port": "grpc"}}}),
            ports.clone(),
        )
        .unwrap_err();
        assert!(
            named
                .to_string()
                .contains("httpRoute.rules.r.port \"grpc\" is not a port")
        );
        let missing = render(json!({"gateways": {"g": {}}}), ports).unwrap_err();
        assert!(
            missing
                .to_string()
                .contains("is required when the Service has several ports")
        );
    }
}
