//! IngressTransformer: renders the Ingress trait into a `networking.k8s.io/v1` Ingress that
//! routes hosts and paths to the component's Service.
//!
//! The Service is the one the Expose trait renders, so the component must have Expose; each
//! `port` names one of its ports, and may be left out when it has exactly one. Routes come in
//! one of two forms:
//!
//! - the short form, one host and one path: `host`, `path` (default `/`), `pathType` (default
//!   `Prefix`) and `port`;
//! - `rules`, a list of hosts in the order written, each with its `paths` (default one `/`),
//!   each path with its own `pathType` and `port`.
//!
//! `tls` is one `{secretName, hosts}` or a list of them; `hosts` left out are the hosts of the
//! rules. `labels` and `annotations` are merged over the component's (an ingress controller's
//! settings, such as ingress-nginx's `proxy-body-size`, and cert-manager's issuer, live there).

use opm_guest::{Component, Context, Map, TransformError, Transformer, Value, json};
use opm_k8s_common::meta::merge_metadata;
use opm_k8s_common::object_metadata;
use opm_k8s_common::ports::{backend_port, required_expose, service_ports};

/// Renders the Ingress trait into Ingresses.
pub struct IngressTransformer;

/// Path of a route that names none.
pub const DEFAULT_PATH: &str = "/";

/// Path type of a route that names none.
pub const DEFAULT_PATH_TYPE: &str = "Prefix";

/// The fields of the short form, which `rules` replaces.
const SHORT_FORM: &[&str] = &["host", "path", "pathType", "port"];

/// What the API server refuses in an `Exact` or `Prefix` path, anywhere in it.
const INVALID_PATH_SEQUENCES: &[&str] = &["//", "/./", "/../", "%2f", "%2F"];

/// What the API server refuses at the end of an `Exact` or `Prefix` path.
const INVALID_PATH_SUFFIXES: &[&str] = &["/..", "/."];

impl Transformer for IngressTransformer {
    fn transform(component: &Component, context: &Context) -> Result<Vec<Value>, TransformError> {
        let ingress: Value = component.require("ingress")?;
        let expose = required_expose(component, "an Ingress", "the Ingress routes to")?;
        let ports = service_ports(component, Some(&expose))?;
        let service = context.object_name(component.name());
        let route = |path: &Value, field: &str| -> Result<Value, TransformError> {
            let port = backend_port(
                &ports,
                path.get("port").and_then(Value::as_str),
                &format!("{field}.port"),
            )?["name"]
                .clone();
            let text = path
                .get("path")
                .and_then(Value::as_str)
                .unwrap_or(DEFAULT_PATH);
            let kind = path
                .get("pathType")
                .and_then(Value::as_str)
                .unwrap_or(DEFAULT_PATH_TYPE);
            check_path(text, kind, field)?;
            Ok(json!({
                "path": text,
                "pathType": kind,
                "backend": {"service": {"name": service, "port": {"name": port}}},
            }))
        };
        let rules: Vec<(Option<&str>, Vec<Value>)> = match ingress.get("rules") {
            Some(Value::Array(rules)) => {
                if let Some(field) = SHORT_FORM.iter().find(|f| ingress.get(**f).is_some()) {
                    return Err(TransformError::invalid(format!(
                        "ingress.{field} and ingress.rules are two ways to write the routes; \
                         use one: move {field} into the rules"
                    )));
                }
                rules
                    .iter()
                    .enumerate()
                    .map(|(i, rule)| {
                        let default_paths = [json!({})];
                        let paths = match rule.get("paths") {
                            Some(Value::Array(paths)) if !paths.is_empty() => paths.as_slice(),
                            _ => &default_paths,
                        };
                        let paths = paths
                            .iter()
                            .enumerate()
                            .map(|(j, path)| route(path, &format!("ingress.rules[{i}].paths[{j}]")))
                            .collect::<Result<Vec<_>, _>>()?;
                        Ok((rule.get("host").and_then(Value::as_str), paths))
                    })
                    .collect::<Result<_, TransformError>>()?
            }
            _ => vec![(
                ingress.get("host").and_then(Value::as_str),
                vec![route(&ingress, "ingress")?],
            )],
        };
        let mut hosts: Vec<&str> = Vec::new();
        for host in rules.iter().filter_map(|(host, _)| *host) {
            if !hosts.contains(&host) {
                hosts.push(host);
            }
        }

        let mut spec = Map::new();
        if let Some(class) = ingress.get("className") {
            spec.insert("ingressClassName".into(), class.clone());
        }
        let tls: Vec<Value> = match ingress.get("tls") {
            Some(Value::Array(entries)) => entries.iter().map(|t| tls_entry(t, &hosts)).collect(),
            Some(entry @ Value::Object(_)) => vec![tls_entry(entry, &hosts)],
            _ => Vec::new(),
        };
        if !tls.is_empty() {
            spec.insert("tls".into(), Value::Array(tls));
        }
        let rules: Vec<Value> = rules
            .into_iter()
            .map(|(host, paths)| {
                let mut rule = Map::new();
                if let Some(host) = host {
                    rule.insert("host".into(), Value::from(host));
                }
                rule.insert("http".into(), json!({"paths": paths}));
                Value::Object(rule)
            })
            .collect();
        spec.insert("rules".into(), Value::Array(rules));
        let mut metadata = object_metadata(component, context, &service);
        merge_metadata(&mut metadata, &ingress, "ingress")?;
        Ok(vec![json!({
            "apiVersion": "networking.k8s.io/v1",
            "kind": "Ingress",
            "metadata": metadata,
            "spec": spec,
        })])
    }
}

/// One entry of `spec.tls`: its `hosts`, else the rules' hosts when there are any, and its
/// `secretName`.
fn tls_entry(written: &Value, rule_hosts: &[&str]) -> Value {
    let mut tls = Map::new();
    match written.get("hosts") {
        Some(hosts) => {
            tls.insert("hosts".into(), hosts.clone());
        }
        None if !rule_hosts.is_empty() => {
            tls.insert("hosts".into(), json!(rule_hosts));
        }
        None => {}
    }
    if let Some(secret) = written.get("secretName") {
        tls.insert("secretName".into(), secret.clone());
    }
    Value::Object(tls)
}

/// Refuses a path the API server refuses for its type (`field` names it in the error): every
/// path is absolute, and an `Exact` or `Prefix` one has no `//`, `/./`, `/../` or encoded
/// slash, and does not end in `/.` or `/..`.
fn check_path(path: &str, kind: &str, field: &str) -> Result<(), TransformError> {
    if !path.starts_with('/') {
        return Err(TransformError::invalid(format!(
            "{field}.path {path:?} must start with /"
        )));
    }
    if kind == "ImplementationSpecific" {
        return Ok(());
    }
    let bad = INVALID_PATH_SEQUENCES
        .iter()
        .find(|sequence| path.contains(**sequence))
        .or_else(|| {
            INVALID_PATH_SUFFIXES
                .iter()
                .find(|suffix| path.ends_with(**suffix))
        });
    match bad {
        Some(bad) => Err(TransformError::invalid(format!(
            "{field}.path {path:?} may not contain {bad:?} with pathType {kind}; use \
             ImplementationSpecific for a path the ingress controller reads its own way"
        ))),
        None => Ok(()),
    }
}

#[cfg(not(feature = "library"))]
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
    fn the_short_form_takes_a_path_type_labels_and_annotations() {
        let out = render(web(json!({
            "host": "shop.example.com", "path": "/api/v1", "pathType": "Exact", "port": "http",
            "labels": {"exposure": "public"},
            "annotations": {"cert-manager.io/cluster-issuer": "letsencrypt",
                            "nginx.ingress.kubernetes.io/proxy-body-size": "0"},
        })))
        .unwrap();
        assert_eq!(
            out[0]["spec"]["rules"][0]["http"]["paths"][0]["pathType"],
            "Exact"
        );
        assert_eq!(
            out[0]["metadata"],
            json!({"name": "web",
                   "labels": {"app.kubernetes.io/instance": "", "app.kubernetes.io/name": "web",
                              "exposure": "public"},
                   "annotations": {"cert-manager.io/cluster-issuer": "letsencrypt",
                                   "nginx.ingress.kubernetes.io/proxy-body-size": "0"}})
        );
    }

    #[test]
    fn rules_route_several_hosts_and_paths_each_to_its_port() {
        let out = render(web(json!({
            "className": "nginx",
            "rules": [
                {"host": "shop.example.com", "paths": [
                    {"path": "/", "port": "http"},
                    {"path": "/metrics", "pathType": "Exact", "port": "metrics"},
                    {"path": "/(api|admin)/.*", "pathType": "ImplementationSpecific", "port": "http"},
                ]},
                {"host": "www.shop.example.com", "paths": [{"port": "http"}]},
                {"host": "shop.example.com", "paths": [{"path": "/static", "port": "http"}]},
            ],
            "tls": [{"secretName": "shop-tls"},
                    {"secretName": "www-tls", "hosts": ["www.shop.example.com"]}],
        })))
        .unwrap();
        let backend = |port: &str| json!({"service": {"name": "web", "port": {"name": port}}});
        assert_eq!(
            out[0]["spec"],
            json!({
                "ingressClassName": "nginx",
                "tls": [{"hosts": ["shop.example.com", "www.shop.example.com"], "secretName": "shop-tls"},
                        {"hosts": ["www.shop.example.com"], "secretName": "www-tls"}],
                "rules": [
                    {"host": "shop.example.com", "http": {"paths": [
                        {"path": "/", "pathType": "Prefix", "backend": backend("http")},
                        {"path": "/metrics", "pathType": "Exact", "backend": backend("metrics")},
                        {"path": "/(api|admin)/.*", "pathType": "ImplementationSpecific",
                         "backend": backend("http")},
                    ]}},
                    {"host": "www.shop.example.com", "http": {"paths": [
                        {"path": "/", "pathType": "Prefix", "backend": backend("http")}]}},
                    {"host": "shop.example.com", "http": {"paths": [
                        {"path": "/static", "pathType": "Prefix", "backend": backend("http")}]}},
                ],
            })
        );
    }

    #[test]
    fn rules_and_the_short_form_are_exclusive_and_each_path_names_its_port() {
        let err = render(web(
            json!({"host": "a.example.com", "rules": [{"host": "b.example.com"}]}),
        ))
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("ingress.host and ingress.rules are two ways"),
            "{err}"
        );
        let err = render(web(
            json!({"rules": [{"paths": [{"port": "http"}, {"path": "/x"}]}]}),
        ))
        .unwrap_err();
        assert!(
            err.to_string().contains(
                "ingress.rules[0].paths[1].port is required when the Service has several ports"
            ),
            "{err}"
        );
    }

    #[test]
    fn paths_the_api_server_refuses_are_invalid() {
        for (path, kind) in [
            ("/a//b", "Prefix"),
            ("/a/./b", "Exact"),
            ("/a/../b", "Prefix"),
            ("/a%2Fb", "Prefix"),
            ("/a/..", "Exact"),
            ("/a/.", "Prefix"),
        ] {
            let err =
                render(web(json!({"path": path, "pathType": kind, "port": "http"}))).unwrap_err();
            assert!(err.to_string().contains("may not contain"), "{path}: {err}");
        }
        assert!(
            render(web(
                json!({"path": "/a//b", "pathType": "ImplementationSpecific", "port": "http"})
            ))
            .is_ok()
        );
        let err = render(web(
            json!({"rules": [{"paths": [{"path": "api", "port": "http"}]}]}),
        ))
        .unwrap_err();
        assert!(err.to_string().contains("must start with /"), "{err}");
    }

    #[test]
    fn tls_without_hosts_and_without_rule_hosts_has_none() {
        let out = render(web(json!({"port": "http", "tls": [{"secretName": "a"}]}))).unwrap();
        assert_eq!(out[0]["spec"]["tls"], json!([{"secretName": "a"}]));
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
