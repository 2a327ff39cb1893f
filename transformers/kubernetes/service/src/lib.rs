//! ServiceTransformer: renders the Expose trait of a component into a `v1` Service named after
//! the component that selects its pods. `type: Headless` is a ClusterIP Service without a
//! cluster IP. Ports are `expose.ports`, or else every container port (see
//! `opm_k8s_common::ports`), each with its `appProtocol` when it names one.
//!
//! The Service settings are copied as the API spells them, and refused where the API server
//! would refuse them (the trait's schema refuses the same at `opm mod vet`):
//!
//! - `sessionAffinity` (`None`, `ClientIP`) and `sessionAffinityConfig.clientIP.timeoutSeconds`
//!   (1 to 86400), the latter only with `ClientIP`;
//! - `externalTrafficPolicy` (`Cluster`, `Local`), only for `NodePort` and `LoadBalancer`;
//!   `internalTrafficPolicy` (`Cluster`, `Local`), for every type;
//! - `loadBalancerClass` and `loadBalancerSourceRanges` (CIDRs), only for `LoadBalancer`;
//! - `ipFamilyPolicy` (`SingleStack`, `PreferDualStack`, `RequireDualStack`) and `ipFamilies`
//!   (`IPv4`, `IPv6`, at most one of each, only one for `SingleStack`);
//! - `labels` and `annotations`, merged over the component's (`opm_k8s_common::meta`).

use std::net::IpAddr;

use opm_guest::{Component, Context, Map, TransformError, Transformer, Value, json};
use opm_k8s_common::meta::merge_metadata;
use opm_k8s_common::ports::service_ports;
use opm_k8s_common::{copy_fields, object_metadata, selector_labels};

/// Renders exposed components into Services.
pub struct ServiceTransformer;

/// The longest session affinity the API server accepts, in seconds (a day).
pub const MAX_SESSION_AFFINITY_SECONDS: u64 = 86_400;

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
        check_settings(&expose, kind)?;
        spec.insert("selector".into(), selector_labels(component, context));
        spec.insert("ports".into(), Value::Array(ports));
        copy_fields(&expose, &mut spec, SETTINGS);
        let mut metadata = object_metadata(
            component,
            context,
            &opm_k8s_common::pinned_name(component, context, &expose),
        );
        merge_metadata(&mut metadata, &expose, "expose")?;
        Ok(vec![json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": metadata,
            "spec": spec,
        })])
    }
}

/// The fields of Expose copied into the Service's `spec` as written, in this order.
const SETTINGS: &[&str] = &[
    "sessionAffinity",
    "sessionAffinityConfig",
    "externalTrafficPolicy",
    "internalTrafficPolicy",
    "loadBalancerClass",
    "loadBalancerSourceRanges",
    "ipFamilyPolicy",
    "ipFamilies",
];

/// Refuses the settings of `expose` that the API server refuses for a Service of `kind` (an
/// Expose type).
fn check_settings(expose: &Value, kind: &str) -> Result<(), TransformError> {
    let has = |field: &str| expose.get(field).is_some_and(|value| !value.is_null());
    if has("sessionAffinityConfig") {
        if expose.get("sessionAffinity").and_then(Value::as_str) != Some("ClientIP") {
            return Err(TransformError::invalid(
                "expose.sessionAffinityConfig needs expose.sessionAffinity ClientIP",
            ));
        }
        let timeout = expose.pointer("/sessionAffinityConfig/clientIP/timeoutSeconds");
        if let Some(timeout) = timeout
            && !timeout
                .as_u64()
                .is_some_and(|seconds| (1..=MAX_SESSION_AFFINITY_SECONDS).contains(&seconds))
        {
            return Err(TransformError::invalid(format!(
                "expose.sessionAffinityConfig.clientIP.timeoutSeconds must be 1 to \
                 {MAX_SESSION_AFFINITY_SECONDS}"
            )));
        }
    }
    if has("externalTrafficPolicy") && kind != "NodePort" && kind != "LoadBalancer" {
        return Err(TransformError::invalid(
            "expose.externalTrafficPolicy needs expose.type NodePort or LoadBalancer: a \
             ClusterIP or Headless Service takes no external traffic",
        ));
    }
    for field in ["loadBalancerClass", "loadBalancerSourceRanges"] {
        if has(field) && kind != "LoadBalancer" {
            return Err(TransformError::invalid(format!(
                "expose.{field} needs expose.type LoadBalancer"
            )));
        }
    }
    for range in expose
        .get("loadBalancerSourceRanges")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if !range.as_str().is_some_and(is_cidr) {
            return Err(TransformError::invalid(format!(
                "expose.loadBalancerSourceRanges: {range} is not a CIDR (such as 10.0.0.0/8 or \
                 2001:db8::/32)"
            )));
        }
    }
    let families: Vec<&str> = expose
        .get("ipFamilies")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if families.len() == 2 && families[0] == families[1] || families.len() > 2 {
        return Err(TransformError::invalid(
            "expose.ipFamilies names each of IPv4 and IPv6 at most once",
        ));
    }
    if families.len() > 1
        && expose.get("ipFamilyPolicy").and_then(Value::as_str) != Some("PreferDualStack")
        && expose.get("ipFamilyPolicy").and_then(Value::as_str) != Some("RequireDualStack")
    {
        return Err(TransformError::invalid(
            "expose.ipFamilies names two families, which needs expose.ipFamilyPolicy \
             PreferDualStack or RequireDualStack",
        ));
    }
    Ok(())
}

/// Whether `text` is an IPv4 or IPv6 CIDR: an address, a slash and a prefix length no longer
/// than the address.
fn is_cidr(text: &str) -> bool {
    let Some((address, length)) = text.split_once('/') else {
        return false;
    };
    let Ok(address) = address.parse::<IpAddr>() else {
        return false;
    };
    let bits = if address.is_ipv4() { 32 } else { 128 };
    !length.starts_with('+')
        && (length == "0" || !length.starts_with('0'))
        && length.parse::<u8>().is_ok_and(|length| length <= bits)
}

#[cfg(not(feature = "library"))]
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

    fn load_balancer(settings: Value) -> Value {
        let mut expose = json!({"type": "LoadBalancer",
                                "ports": {"web": {"port": 443, "appProtocol": "https"},
                                          "ws": {"port": 8080, "appProtocol": "kubernetes.io/ws"}}});
        expose
            .as_object_mut()
            .unwrap()
            .extend(settings.as_object().unwrap().clone());
        json!({"container": {"image": "x"}, "expose": expose})
    }

    #[test]
    fn maximal_service_has_every_setting_labels_and_annotations() {
        let out = render(load_balancer(json!({
            "labels": {"tier": "edge"},
            "annotations": {"service.beta.kubernetes.io/aws-load-balancer-type": "nlb"},
            "sessionAffinity": "ClientIP",
            "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 3600}},
            "externalTrafficPolicy": "Local",
            "internalTrafficPolicy": "Cluster",
            "loadBalancerClass": "service.k8s.aws/nlb",
            "loadBalancerSourceRanges": ["10.0.0.0/8", "2001:db8::/32"],
            "ipFamilyPolicy": "PreferDualStack",
            "ipFamilies": ["IPv4", "IPv6"],
        })))
        .unwrap();
        assert_eq!(
            out[0],
            json!({"apiVersion": "v1", "kind": "Service",
                   "metadata": {"name": "api",
                                "labels": {"app.kubernetes.io/instance": "shop",
                                           "app.kubernetes.io/name": "api", "tier": "edge"},
                                "annotations": {"service.beta.kubernetes.io/aws-load-balancer-type": "nlb"}},
                   "spec": {"type": "LoadBalancer",
                            "selector": {"app.kubernetes.io/instance": "shop",
                                         "app.kubernetes.io/name": "api"},
                            "ports": [{"name": "web", "port": 443, "targetPort": 443, "appProtocol": "https"},
                                      {"name": "ws", "port": 8080, "targetPort": 8080,
                                       "appProtocol": "kubernetes.io/ws"}],
                            "sessionAffinity": "ClientIP",
                            "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 3600}},
                            "externalTrafficPolicy": "Local",
                            "internalTrafficPolicy": "Cluster",
                            "loadBalancerClass": "service.k8s.aws/nlb",
                            "loadBalancerSourceRanges": ["10.0.0.0/8", "2001:db8::/32"],
                            "ipFamilyPolicy": "PreferDualStack",
                            "ipFamilies": ["IPv4", "IPv6"]}})
        );
        let keys: Vec<&String> = out[0]["spec"].as_object().unwrap().keys().collect();
        assert_eq!(keys[..3], ["type", "selector", "ports"]);
        assert_eq!(keys[3..], *SETTINGS);
    }

    #[test]
    fn settings_the_api_server_refuses_are_invalid() {
        let refused = |settings: Value, kind: &str, says: &str| {
            let mut spec = load_balancer(settings);
            spec["expose"]["type"] = json!(kind);
            let err = render(spec).unwrap_err().to_string();
            assert!(err.contains(says), "{kind}: {says:?} missing from {err}");
        };
        refused(
            json!({"sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10}}}),
            "ClusterIP",
            "needs expose.sessionAffinity ClientIP",
        );
        refused(
            json!({"sessionAffinity": "ClientIP",
                   "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 86_401}}}),
            "ClusterIP",
            "timeoutSeconds must be 1 to 86400",
        );
        for kind in ["ClusterIP", "Headless"] {
            refused(
                json!({"externalTrafficPolicy": "Local"}),
                kind,
                "expose.externalTrafficPolicy needs expose.type NodePort or LoadBalancer",
            );
        }
        refused(
            json!({"loadBalancerSourceRanges": ["10.0.0.0/8"]}),
            "NodePort",
            "expose.loadBalancerSourceRanges needs expose.type LoadBalancer",
        );
        refused(
            json!({"loadBalancerClass": "example.com/lb"}),
            "ClusterIP",
            "expose.loadBalancerClass needs expose.type LoadBalancer",
        );
        for range in [
            "10.0.0.0",
            "10.0.0.0/33",
            "010.0.0.0/8",
            "fe80::/129",
            "x/1",
        ] {
            refused(
                json!({"loadBalancerSourceRanges": [range]}),
                "LoadBalancer",
                "is not a CIDR",
            );
        }
        refused(
            json!({"ipFamilies": ["IPv4", "IPv4"]}),
            "ClusterIP",
            "at most once",
        );
        refused(
            json!({"ipFamilyPolicy": "SingleStack", "ipFamilies": ["IPv4", "IPv6"]}),
            "ClusterIP",
            "needs expose.ipFamilyPolicy PreferDualStack or RequireDualStack",
        );
    }

    #[test]
    fn external_traffic_policy_suits_node_ports_and_a_client_ip_affinity_any_type() {
        let mut spec = load_balancer(json!({"externalTrafficPolicy": "Local"}));
        spec["expose"]["type"] = json!("NodePort");
        assert_eq!(
            render(spec).unwrap()[0]["spec"]["externalTrafficPolicy"],
            "Local"
        );
        let mut spec = load_balancer(json!({"sessionAffinity": "ClientIP",
                                            "internalTrafficPolicy": "Local",
                                            "ipFamilyPolicy": "SingleStack",
                                            "ipFamilies": ["IPv6"]}));
        spec["expose"]["type"] = json!("Headless");
        let out = render(spec).unwrap();
        assert_eq!(out[0]["spec"]["sessionAffinity"], "ClientIP");
        assert_eq!(out[0]["spec"]["ipFamilies"], json!(["IPv6"]));
    }
}
